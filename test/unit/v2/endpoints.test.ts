import { describe, expect, it } from '@jest/globals';
import { openApiDocument } from '../../../gateway/api/openapi.js';
import { inferenceService } from '../../../gateway/grpc/protocol.js';
import { MODEL } from '../../../gateway/v2/endpoint.js';
import { V2_ENDPOINTS } from '../../../gateway/v2/endpoints/index.js';
import { matchV2 } from '../../../gateway/v2/paths.js';

/** A path an endpoint answers, its model named `model-a` (and, when asked, its version 2). */
const pathOf = (segments: readonly string[], version: boolean): string[] => [
  'v2',
  ...segments.flatMap((s) => (s !== MODEL ? [s] : version ? ['model-a', 'versions', '2'] : ['model-a'])),
];

describe('the V2 endpoints, as each declares itself', () => {
  it('are found by the paths they declare, with the model and version those carry, and by nothing else', () => {
    for (const spec of V2_ENDPOINTS) {
      expect(matchV2(pathOf(spec.path, false)).spec).toBe(spec);
      if (!spec.forModel) continue;
      expect(matchV2(pathOf(spec.path, true))).toEqual({ spec, model: 'model-a', version: '2' });
    }
    const declared = V2_ENDPOINTS.map((e) => `${e.method} ${e.path.join('/')}`);
    expect(new Set(declared).size).toBe(declared.length);
  });

  it('name only gRPC methods the protocol has, each once, open exactly where REST is', () => {
    const methods = Object.keys(inferenceService());
    const named = V2_ENDPOINTS.flatMap((e) => (e.grpc === undefined ? [] : [e.grpc]));
    for (const method of named) expect(methods).toContain(method);
    expect(new Set(named).size).toBe(named.length);
    const open = V2_ENDPOINTS.filter((e) => e.security === 'none').map((e) => e.grpc);
    expect(open.sort()).toEqual(['ServerLive', 'ServerMetadata', 'ServerReady']);
  });

  it('are in the OpenAPI document as they declare themselves, and only those', () => {
    const doc = openApiDocument({ maxRollGraceSeconds: 60, version: 'test' }) as {
      paths: Record<string, Record<string, { operationId: string; security: unknown[] }>>;
    };
    const documented = Object.entries(doc.paths)
      .filter(([path]) => path.startsWith('/v2'))
      .flatMap(([path, ops]) =>
        Object.entries(ops).map(([method, op]) => `${method.toUpperCase()} ${path} ${op.operationId}`),
      );
    const declared = V2_ENDPOINTS.flatMap((e) =>
      e.openapi === undefined
        ? []
        : [`${e.method} /${['v2', ...e.path].join('/').replace(MODEL, '{name}')} ${e.openapi.operationId}`],
    );
    expect(documented.sort()).toEqual(declared.sort());
    expect(doc.paths['/v2/health/live']?.get?.security).toEqual([]);
    expect(doc.paths['/v2/models/{name}/infer']?.post?.security).toEqual([{ apiKey: [] }]);
  });

  it('under a workflow, reach only the model’s own endpoints: its inference through the core', () => {
    const reached = V2_ENDPOINTS.filter((e) => e.underWorkflow !== undefined).map(
      (e) => `${e.name} ${e.underWorkflow}`,
    );
    expect(reached.sort()).toEqual([
      'health-live runtime',
      'health-ready runtime',
      'model-infer core',
      'model-metadata runtime',
      'model-ready runtime',
    ]);
  });
});
