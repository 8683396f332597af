// Bundles the sidecar into dist/sidecar/ (run by `make build` and the image's build, after tsc).
// One sidecar runs in every guarded pod, so its memory is paid per pod: loaded as one minified
// bundle it takes about 20 MiB less than as ~300 modules (README, "The data plane's cost").
// The other commands run from dist/ as compiled.
import { copyFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const out = 'dist/sidecar';
const dispatchers = fileURLToPath(new URL('./undici-dispatchers.cjs', import.meta.url));

/**
 * `undici` resolves to its two dispatchers only (undici-dispatchers.cjs); a file on the sidecar's
 * path that imports anything else from it fails the build here, not a call in a pod.
 */
const undiciDispatchersOnly = {
  name: 'undici-dispatchers-only',
  setup(b) {
    b.onResolve({ filter: /^undici$/ }, () => ({ path: dispatchers }));
    b.onLoad({ filter: /\.js$/, namespace: 'file' }, async (args) => {
      if (args.path.includes('/node_modules/')) return undefined;
      const { readFile } = await import('node:fs/promises');
      const text = await readFile(args.path, 'utf8');
      for (const m of text.matchAll(/import\s*\{([^}]*)\}\s*from\s*['"]undici['"]/g)) {
        const names = m[1]
          .split(',')
          .map((n) => n.trim().split(/\s+as\s+/)[0])
          .filter(Boolean);
        const other = names.filter((n) => n !== 'Pool' && n !== 'Agent');
        if (other.length > 0)
          return {
            errors: [
              {
                text: `imports ${other.join(', ')} from undici; the sidecar's bundle has only Pool and Agent`,
              },
            ],
          };
      }
      return undefined;
    });
  },
};

await build({
  entryPoints: { main: 'dist/cli/sidecar-main.js' },
  outdir: out,
  bundle: true,
  // gRPC (a model's sidecar only) stays a chunk of its own, loaded when its port is asked for.
  splitting: true,
  minify: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // The CommonJS dependencies (ioredis, pino...) call require() for Node's own modules.
  banner: {
    js: "import { createRequire as __tgRequire } from 'node:module'; const require = __tgRequire(import.meta.url);",
  },
  plugins: [undiciDispatchersOnly],
  logLevel: 'warning',
});
// Read beside the gRPC chunk (gateway/grpc/protocol.ts).
copyFileSync('gateway/grpc/open-inference.proto', `${out}/open-inference.proto`);
