import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromiumPath, launchChromium } from '../../harness/index.js';

// The page computes its text with JavaScript and calls back to the server, so the test proves a
// real browser ran scripts and made requests on loopback.
const page = `<!doctype html>
<html><head><title>tollgate harness</title></head>
<body><p id="out">not run</p>
<script>
  fetch('/api/answer').then((r) => r.json()).then((j) => {
    document.getElementById('out').textContent = 'answer=' + j.answer;
  });
</script></body></html>`;

describe('harness: chromium', () => {
  let server: Server;
  let base: string;

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/api/answer') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ answer: 42 }));
      } else {
        res.writeHead(200, { 'content-type': 'text/html' }).end(page);
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
  });

  it('uses the system chromium, not a downloaded one', () => {
    expect(chromiumPath()).toBe('/usr/bin/chromium');
  });

  it('loads a page served on loopback and runs its scripts', async () => {
    const browser = await launchChromium();
    try {
      const tab = await browser.newPage();
      await tab.goto(base);
      expect(await tab.title()).toBe('tollgate harness');
      await tab.locator('#out', { hasText: 'answer=42' }).waitFor({ timeout: 10_000 });
      expect(browser.version()).toMatch(/^\d+\./);
    } finally {
      await browser.close();
    }
  });
});
