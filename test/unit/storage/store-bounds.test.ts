import { createServer, type Server } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { refusal } from '../../harness/refusal.js';
import { openStore } from '../../../operator/storage/open-store.js';
import { MAX_LISTED_PAGES, MAX_TEXT_BYTES } from '../../../operator/storage/object-store.js';

/**
 * A Model's store is its author's choice, and the operator reads it for every team: what it
 * answers is bounded in size, pages and time, whatever it is.
 */
describe('a store that answers without end', () => {
  let server: Server;
  let listings = 0;
  let endpoint: string;

  beforeAll(async () => {
    server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://store');
      if (url.searchParams.get('list-type') === '2') {
        listings += 1;
        // Always "more to come", never an object.
        res.writeHead(200, { 'content-type': 'application/xml' });
        res.end(
          `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>bucket</Name><Prefix>m/</Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated><NextContinuationToken>t${listings}</NextContinuationToken></ListBucketResult>`,
        );
        return;
      }
      if (url.pathname.endsWith('/huge.json')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        const chunk = Buffer.alloc(64 * 1024, 0x20);
        const more = () => {
          while (res.write(chunk));
        };
        res.on('drain', more);
        more();
        return;
      }
      // Anything else: taken, and never answered.
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const store = () =>
    openStore('s3://bucket/m/', {
      AWS_ACCESS_KEY_ID: 'a',
      AWS_SECRET_ACCESS_KEY: 'b',
      AWS_ENDPOINT_URL: endpoint,
    });

  it('a listing that pages on and on is cut after its pages', async () => {
    const err = await refusal(store().list());
    expect([err.code, err.status]).toEqual(['folder_too_large', 400]);
    expect(err.message).toBe(
      "s3://bucket/m/ holds more than 10000 objects; point storageUri at the model's own folder",
    );
    expect(listings).toBe(MAX_LISTED_PAGES + 1);
  });

  it('a settings file without end is refused past its limit', async () => {
    const err = await refusal(store().readText('huge.json'));
    expect([err.code, err.status]).toEqual(['file_too_large', 400]);
    expect(err.message).toContain(`larger than ${MAX_TEXT_BYTES} bytes`);
  });

  it('a store that never answers is given up at the caller’s deadline', async () => {
    const started = Date.now();
    const err = await refusal(store().readText('silent.json', AbortSignal.timeout(300)));
    expect(err.code).toBe('storage_unavailable');
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe('a folder on disk', () => {
  it('refuses a settings file past the limit', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'tollgate-bounds-'));
    try {
      await writeFile(path.join(dir, 'model-settings.json'), Buffer.alloc(MAX_TEXT_BYTES + 1, 0x20));
      const err = await refusal(openStore(`file://${dir}`, {}).readText('model-settings.json'));
      expect(err.code).toBe('file_too_large');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
