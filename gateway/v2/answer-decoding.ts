import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';

/** The content encodings a runtime may answer with, undone where the gateway reads an answer (bounded, as the body is). */
const INFLATE: Record<string, (b: Buffer, o: { maxOutputLength: number }) => Buffer> = {
  gzip: gunzipSync,
  'x-gzip': gunzipSync,
  deflate: inflateSync,
  br: brotliDecompressSync,
};

/** A runtime's answer as its caller reads it (at most `maxBytes` once inflated), or why it cannot be. */
export function decoded(
  raw: Buffer,
  encoding: string | undefined,
  maxBytes: number,
):
  | Buffer
  | { unparsed: true; bytes: number; encoding: string }
  | { truncated: true; encodedBytes: number; encoding: string } {
  const coding = encoding?.trim().toLowerCase();
  if (coding === undefined || coding === '' || coding === 'identity') return raw;
  const inflate = INFLATE[coding];
  if (inflate === undefined) return { unparsed: true, bytes: raw.length, encoding: coding };
  try {
    return inflate(raw, { maxOutputLength: maxBytes });
  } catch {
    return { truncated: true, encodedBytes: raw.length, encoding: coding };
  }
}
