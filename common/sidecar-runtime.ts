/**
 * How a sidecar's Node starts: one runs in every guarded pod, so its memory is paid per pod. The
 * young generation stays at 1 MiB per half instead of growing to 16 MiB under load: ~25 MiB off
 * the peak, while at 1,000 req/s the sidecar's latency and CPU per call stay within run-to-run
 * noise with and without it (`make bench ARGS=sidecar`, README "The data plane's cost"). Heap sizes are read once, as the process starts, so the
 * webhook sets this as the container's NODE_OPTIONS; the rest is gateway/sidecar/memory.ts.
 */
export const SIDECAR_NODE_OPTIONS = '--max-semi-space-size=1';

/**
 * What a sidecar's calls may hold at once (V2 bodies being checked, gRPC messages and unread
 * answers: gateway/http/held-memory.ts), set by the webhook beside the container's 256 MiB limit:
 * the sidecar's own ~65 MiB, and what it holds may take a few times its size while it is decoded
 * and checked. A central gateway's default (16 body limits) would not fit.
 */
export const SIDECAR_HELD_BYTES = 48 * 1024 * 1024;
