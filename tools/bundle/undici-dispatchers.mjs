// What the sidecar's bundle gets for `undici` (tools/bundle/sidecar.mjs): its two dispatchers, from
// the pinned package's own files. undici's index also loads fetch, WebSocket, EventSource, caches
// and mocks, ~10 MiB of memory a sidecar never uses. A file in the bundle that imports any other
// name from undici fails the build (esbuild: no matching export), not a call in a pod.
import Dispatcher from 'undici/lib/dispatcher/dispatcher.js';
import api from 'undici/lib/api/index.js';
import Pool from 'undici/lib/dispatcher/pool.js';
import Agent from 'undici/lib/dispatcher/agent.js';

// As undici's index does: the request/stream/pipeline methods every dispatcher has.
Object.assign(Dispatcher.prototype, api);

export { Pool, Agent };
