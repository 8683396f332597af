import { readFile } from 'node:fs/promises';
import { GATEWAY_ENV } from '../../../gateway/config/sources.js';
import { SETTINGS_DOC, settingsDoc } from '../../../tools/codegen/settings-doc.js';

describe('the settings reference (docs/settings.md)', () => {
  // Generating loads every command's module graph (the operator's and the gateway's) through the
  // transform, which on a cold cache takes longer than a unit test's default 5 s: once, here.
  let generated = '';
  beforeAll(async () => {
    generated = await settingsDoc();
  }, 120_000);

  test('is generated from the programs’ declarations as they are now (run npm run codegen)', async () => {
    expect({ file: SETTINGS_DOC, text: await readFile(SETTINGS_DOC, 'utf8') }).toEqual({
      file: SETTINGS_DOC,
      text: generated,
    });
  });

  test('names every environment variable the gateway reads, and each flag with its own', () => {
    for (const [name] of GATEWAY_ENV) expect(generated).toContain(`\`${name}\``);
    // The operator's flags carry their environment names, one per setting.
    expect(generated).toMatch(
      /\| `--redis-url <url>` \| `TOLLGATE_REDIS_URL` \| `redis:\/\/127\.0\.0\.1:6379` \|/,
    );
    expect(generated).toMatch(/\| `--namespace <ns>` \| `TOLLGATE_WATCH_NAMESPACE` \|/);
  });
});
