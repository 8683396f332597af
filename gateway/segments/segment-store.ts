/**
 * Where the gateway keeps append-only JSON Lines: immutable text objects under a folder or an S3
 * prefix, written whole and never changed, so several gateway replicas share one place without
 * coordinating. The audit trail (`<owner-digest>/<yyyy-mm-dd>/<segment>.jsonl`) and the models'
 * payload logs (`model=<m>/date=<d>/hour=<h>/<replica>-<t>.jsonl`) are two of them.
 */
export interface SegmentStore {
  /** For messages: the URI the store was opened from. */
  readonly uri: string;
  put(name: string, body: string): Promise<void>;
  /** Names under `prefix` (which ends with '/'), in any order. */
  list(prefix: string): Promise<string[]>;
  /** The object's text; undefined if it is gone (retention may remove it between list and get). */
  get(name: string): Promise<string | undefined>;
  delete(names: readonly string[]): Promise<void>;
}
