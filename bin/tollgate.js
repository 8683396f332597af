#!/usr/bin/env node
// The CLI runs from the compiled output; `make build` (or any make target) produces it. Before a
// build, say so instead of a module-not-found stack trace.
import { existsSync } from 'node:fs';
import { URL } from 'node:url';

// A sidecar (one per guarded pod) runs from its own bundle (tools/bundle/sidecar.mjs), the rest
// from the compiled modules.
const main = new URL(
  process.argv[2] === 'sidecar' ? '../dist/sidecar/main.js' : '../dist/cli/main.js',
  import.meta.url,
);
if (!existsSync(main)) {
  process.stderr.write(
    'tollgate: the CLI is not built yet; run `make build` (or `make demo`) in the repository first\n',
  );
  process.exit(2);
}
await import(main.href);
