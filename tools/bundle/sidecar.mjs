// Bundles the sidecar into dist/sidecar/ (run by `make build` and the image's build, after tsc).
// One sidecar runs in every guarded pod, so its memory is paid per pod: loaded as one minified
// bundle it takes about 20 MiB less than as ~300 modules (README, "The data plane's cost").
// The other commands run from dist/ as compiled.
import { copyFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('../../', import.meta.url));
const out = `${root}dist/sidecar`;
const dispatchers = fileURLToPath(new URL('./undici-dispatchers.mjs', import.meta.url));

await build({
  entryPoints: { main: `${root}dist/cli/sidecar-main.js` },
  outdir: out,
  bundle: true,
  // gRPC stays a chunk of its own, loaded when a gRPC port is asked for.
  splitting: true,
  minify: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // `undici` itself is its two dispatchers (undici-dispatchers.mjs); its own files stay its own.
  plugins: [
    {
      name: 'undici-dispatchers',
      setup: (b) => b.onResolve({ filter: /^undici$/ }, () => ({ path: dispatchers })),
    },
  ],
  // What CommonJS dependencies expect of a module (ioredis reads its version through __dirname,
  // and every one of them requires Node's own modules).
  banner: {
    js: [
      "import { createRequire as __tgRequire } from 'node:module';",
      "import { dirname as __tgDirname } from 'node:path';",
      "import { fileURLToPath as __tgPath } from 'node:url';",
      'const require = __tgRequire(import.meta.url);',
      'const __filename = __tgPath(import.meta.url);',
      'const __dirname = __tgDirname(__filename);',
    ].join(' '),
  },
  logLevel: 'warning',
});
// Read beside the gRPC chunk (gateway/grpc/protocol.ts).
copyFileSync(`${root}gateway/grpc/open-inference.proto`, `${out}/open-inference.proto`);
