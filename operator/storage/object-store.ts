import type { Readable } from 'node:stream';

export interface StoredObject {
  /** Path relative to the folder, '/'-separated. */
  path: string;
  size: number;
}

/** A model folder in storage: listing, small reads (settings), and streamed (ranged) reads. */
export interface ObjectStore {
  readonly uri: string;
  /** Every object in the folder. Throws no_such_bucket, access_denied, storage_unavailable. */
  list(): Promise<StoredObject[]>;
  readText(path: string): Promise<string>;
  /** A stream of the object's bytes, or of [start, end] inclusive. Throws object_vanished if it is gone. */
  openRead(path: string, range?: { start: number; end: number }, signal?: AbortSignal): Promise<Readable>;
}
