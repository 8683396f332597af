import { readFile } from 'node:fs/promises';
import { GATEWAY_ENV } from '../../../gateway/config.js';
import { SETTINGS_DOC, settingsDoc } from '../../../tools/codegen/settings-doc.js';

describe('the settings reference (docs/settings.md)', () => {
  test('is generated from the programs’ declarations as they are now (run npm run codegen)', async () => {
    const generated = await settingsDoc();
    expect({ file: SETTINGS_DOC, text: await readFile(SETTINGS_DOC, 'utf8') }).toEqual({
      file: SETTINGS_DOC,
      text: generated,
    });
  });

  test('names every environment variable the gateway reads, and each flag with its own', async () => {
    const text = await settingsDoc();
    for (const [name] of GATEWAY_ENV) expect(text).toContain(`\`${name}\``);
    // The operator's flags carry their environment names, one per setting.
    expect(text).toMatch(
      /\| `--redis-url <url>` \| `TOLLGATE_REDIS_URL` \| `redis:\/\/127\.0\.0\.1:6379` \|/,
    );
    expect(text).toMatch(/\| `--namespace <ns>` \| `TOLLGATE_WATCH_NAMESPACE` \|/);
  });
});
