import type { Readable } from 'node:stream';

/**
 * A model folder holds one model's files; a store that lists more is pointed at the wrong place, or
 * is hostile (a Model's storage is its author's choice, and the operator serves every team).
 */
export const MAX_LISTED_OBJECTS = 10_000;
/** S3 lists 1,000 a page: ten for the most a folder may hold; a store that pages on and on is cut. */
export const MAX_LISTED_PAGES = 100;
/** model-settings.json and the like are a few KiB. */
export const MAX_TEXT_BYTES = 1024 * 1024;

export interface StoredObject {
  /** Path relative to the folder, '/'-separated. */
  path: string;
  size: number;
}

/** A model folder in storage: listing, small reads (settings), and streamed (ranged) reads. */
export interface ObjectStore {
  readonly uri: string;
  /**
   * Every object in the folder, at most MAX_LISTED_OBJECTS (folder_too_large past them). Throws
   * no_such_bucket, access_denied, storage_unavailable (also once `signal` aborts).
   */
  list(signal?: AbortSignal): Promise<StoredObject[]>;
  /** A small file (settings) as text, at most MAX_TEXT_BYTES (file_too_large past them). */
  readText(path: string, signal?: AbortSignal): Promise<string>;
  /** A stream of the object's bytes, or of [start, end] inclusive. Throws object_vanished if it is gone. */
  openRead(path: string, range?: { start: number; end: number }, signal?: AbortSignal): Promise<Readable>;
}
