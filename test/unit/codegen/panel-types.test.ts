import { readFile } from 'node:fs/promises';
import { PANEL_TYPES, panelTypes } from '../../../tools/codegen/panel-types.js';

describe("the panel's API types", () => {
  test('are generated from the OpenAPI document as it is now (run npm run codegen)', async () => {
    const generated = await panelTypes();
    expect({ file: PANEL_TYPES, text: await readFile(PANEL_TYPES, 'utf8') }).toEqual({
      file: PANEL_TYPES,
      text: generated,
    });
  });

  test('carry what the hand-copied types had lost (rateLimit, allowedCidrs)', async () => {
    const text = await panelTypes();
    const block = (name: string): string => {
      const start = text.indexOf(`        ${name}: {`);
      return text.slice(start, text.indexOf('\n        };', start));
    };
    expect(block('ApiKey')).toMatch(/rateLimit\?: \{/);
    expect(text).toMatch(/createApiKey: \{[\s\S]*?allowedCidrs\?: string\[\]/);
  });
});
