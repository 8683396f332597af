/**
 * How a sidecar's Node runs: one runs in every guarded pod, so its memory is paid per pod. These
 * V8 settings are the measured ones (`make bench ARGS=sidecar`, README "The data plane's cost"):
 *
 * - `--max-semi-space-size=1`: the young generation stays at 1 MiB per half instead of growing to
 *   16 MiB under load. At 1,000 req/s it costs no measurable latency and keeps ~25 MiB off the
 *   peak. Heap sizes are read once, when the process starts, so it must come from NODE_OPTIONS.
 */
export const SIDECAR_NODE_OPTIONS = '--max-semi-space-size=1';

/**
 * Set by the sidecar itself as it starts, before the first upstream connection: undici parses
 * HTTP with a WebAssembly module, and V8's optimising tier recompiles it in the background for
 * ~10 MiB more memory and no measurable gain in throughput here.
 */
export const SIDECAR_V8_FLAGS = '--liftoff-only';
