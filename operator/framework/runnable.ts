/**
 * Something the operator process runs (controller-runtime's Runnable): the manager starts and
 * stops it, and that is all it knows of it. One that needs the lease runs only while this replica
 * leads, started again at each term; any other runs on every replica from start to stop.
 */
export interface Runnable {
  readonly name: string;
  readonly needsLeader: boolean;
  start(): Promise<void>;
  stop(): Promise<void>;
}
