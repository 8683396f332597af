import { setFlagsFromString } from 'node:v8';

/**
 * Set by a sidecar as it starts, before its first upstream connection (common/sidecar-runtime.ts
 * is what its process starts with). undici parses HTTP with a WebAssembly module, and V8's
 * optimising tier recompiles it in the background for ~10 MiB more, where a proxy's throughput
 * and the sidecar's CPU per call stay within run-to-run noise without it (`make bench
 * ARGS=sidecar`; README, "The data plane's cost"): baseline code only. Node calls flags set after
 * start unsafe in general; this one only decides how WebAssembly compiled later is tiered.
 */
export function keepWasmBaseline(): void {
  setFlagsFromString('--liftoff-only');
}
