import { setFlagsFromString } from 'node:v8';

/**
 * Set by a sidecar as it starts, before its first upstream connection (common/sidecar-runtime.ts
 * is what its process starts with). undici parses HTTP with a WebAssembly module, and V8's
 * optimising tier recompiles it in the background for ~10 MiB more and no measurable throughput
 * here (`make bench ARGS=sidecar`; README, "The data plane's cost"): baseline code only.
 */
export function keepWasmBaseline(): void {
  setFlagsFromString('--liftoff-only');
}
