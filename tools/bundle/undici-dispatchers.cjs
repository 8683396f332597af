// What the sidecar's bundle gets for `undici` (tools/bundle/sidecar.mjs): its two dispatchers, from
// the pinned package's own files. undici's index also loads fetch, WebSocket, EventSource, caches
// and mocks, ~10 MiB of memory a sidecar never uses. Code on the sidecar's path imports only Pool
// and Agent from undici; anything else would be undefined here, and the bundle check refuses it.
'use strict';
// As undici's index does: the request/stream/pipeline methods every dispatcher has.
Object.assign(require('undici/lib/dispatcher/dispatcher.js').prototype, require('undici/lib/api/index.js'));
module.exports = {
  Pool: require('undici/lib/dispatcher/pool.js'),
  Agent: require('undici/lib/dispatcher/agent.js'),
};
