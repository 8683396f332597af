/**
 * `make bench`: runs every benchmark module in turn (or only those named on the command line,
 * e.g. `make bench ARGS=gateway`). Each module exports `run(): Promise<void>` and prints its own
 * figures. Benchmarks are measurements, not tests: they fail only when they cannot run.
 */
const benchmarks: Record<string, () => Promise<{ run: () => Promise<void> }>> = {
  gateway: () => import('./gateway.js'),
  sidecar: () => import('./sidecar.js'),
  inference: () => import('./inference.js'),
  puller: () => import('./puller.js'),
  cluster: () => import('./cluster.js'),
  'cold-starts': async () => ({ run: (await import('./cluster.js')).runColdStarts }),
  scale: () => import('./scale.js'),
  fairness: () => import('./fairness.js'),
};

const wanted = process.argv.slice(2);
for (const name of wanted) {
  if (!(name in benchmarks)) {
    console.error(`unknown benchmark "${name}"; known: ${Object.keys(benchmarks).join(', ')}`);
    process.exit(2);
  }
}
for (const [name, load] of Object.entries(benchmarks)) {
  if (wanted.length > 0 && !wanted.includes(name)) continue;
  console.log(`\n=== ${name} ===`);
  await (await load()).run();
}
