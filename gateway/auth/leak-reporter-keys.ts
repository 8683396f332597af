import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { request } from 'undici';
import { z } from 'zod';
import { TollgateError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';

/** GitHub's shape of a scanning service's published keys. */
const publishedKeysSchema = z.object({
  public_keys: z
    .array(z.object({ key_identifier: z.string().min(1).max(256), key: z.string().min(1).max(4096) }))
    .max(64),
});

/** How long the published keys are kept before they are fetched again. */
const KEEP_MS = 60 * 60_000;
/**
 * A report signed with a key not yet known fetches the list again, at most this often: anyone may
 * post a report, and the service's API allows few unauthenticated fetches an hour.
 */
const REFETCH_MS = 10 * 60_000;
const FETCH_TIMEOUT_MS = 5_000;

const badSignature = (why: string): TollgateError =>
  new TollgateError('invalid_report_signature', `the report is not signed by the scanning service: ${why}`);

/**
 * The public keys a secret-scanning service signs its reports with, fetched from where it publishes
 * them and cached; a report is believed only when its ECDSA P-256 / SHA-256 signature over the
 * raw body verifies with the key it names (`Github-Public-Key-Identifier`,
 * `Github-Public-Key-Signature`, base64 DER).
 */
export class LeakReporterKeys {
  private keys = new Map<string, KeyObject>();
  private fetchedAt = 0;
  private fetching: Promise<void> | undefined;

  constructor(
    private readonly url: string,
    private readonly log: Logger,
  ) {}

  async verify(body: Buffer, keyId: string | undefined, signature: string | undefined): Promise<void> {
    if (keyId === undefined || signature === undefined || keyId === '' || signature === '')
      throw badSignature('send Github-Public-Key-Identifier and Github-Public-Key-Signature');
    const key = await this.keyOf(keyId);
    if (key === undefined)
      throw badSignature(`no published key has the identifier ${JSON.stringify(keyId.slice(0, 80))}`);
    const raw = Buffer.from(signature, 'base64');
    let ok = false;
    try {
      ok = verify('sha256', body, { key, dsaEncoding: 'der' }, raw);
    } catch {
      ok = false;
    }
    if (!ok) throw badSignature('the signature does not verify over the body with that key');
  }

  private async keyOf(id: string): Promise<KeyObject | undefined> {
    const now = Date.now();
    const stale = now - this.fetchedAt > KEEP_MS;
    const unknown = !this.keys.has(id) && now - this.fetchedAt > REFETCH_MS;
    if (stale || unknown) await this.refresh();
    return this.keys.get(id);
  }

  /** Concurrent reports share one fetch; a failed fetch keeps the keys already known. */
  private refresh(): Promise<void> {
    this.fetching ??= this.fetch().finally(() => {
      this.fetching = undefined;
    });
    return this.fetching;
  }

  private async fetch(): Promise<void> {
    this.fetchedAt = Date.now();
    try {
      const res = await request(this.url, {
        headersTimeout: FETCH_TIMEOUT_MS,
        bodyTimeout: FETCH_TIMEOUT_MS,
        headers: { accept: 'application/json' },
      });
      if (res.statusCode !== 200) {
        await res.body.dump();
        throw new Error(`answered ${res.statusCode}`);
      }
      const text = await res.body.text();
      if (text.length > 1024 * 1024) throw new Error('the list is larger than 1 MiB');
      const parsed = publishedKeysSchema.parse(JSON.parse(text));
      const keys = new Map<string, KeyObject>();
      for (const k of parsed.public_keys) {
        try {
          keys.set(k.key_identifier, createPublicKey(k.key));
        } catch {
          this.log.warn({ keyId: k.key_identifier }, 'a published scanning key is not a public key; skipped');
        }
      }
      this.keys = keys;
    } catch (err) {
      this.log.warn(
        { err, url: this.url },
        'the scanning service keys could not be fetched; keeping those known',
      );
    }
  }
}
