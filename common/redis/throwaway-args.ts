/**
 * Arguments for a throw-away `redis-server` on loopback that keeps nothing on disk (no RDB
 * snapshot, no AOF): what the demo, the benchmarks and the test harness start.
 */
export const throwawayRedisArgs = (port: number): string[] => [
  '--port',
  String(port),
  '--bind',
  '127.0.0.1',
  '--save',
  '',
  '--appendonly',
  'no',
  '--daemonize',
  'no',
];
