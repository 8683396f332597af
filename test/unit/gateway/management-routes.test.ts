import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openApiDocument } from '../../../gateway/api/openapi.js';
import type { ManagementRoute } from '../../../gateway/api/route.js';
import { managementRoutes } from '../../../gateway/api/routes/index.js';

const ROUTES_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../gateway/api/routes');

const isRoute = (value: unknown): value is ManagementRoute =>
  typeof value === 'object' && value !== null && 'operationId' in value && 'handler' in value;

describe('management routes', () => {
  test('every route a file in routes/ declares is in the list the router and the document use', async () => {
    const declared: ManagementRoute[] = [];
    for (const file of await readdir(ROUTES_DIR)) {
      if (file === 'index.ts' || !file.endsWith('.ts')) continue;
      const exports = (await import(path.join(ROUTES_DIR, file))) as Record<string, unknown>;
      const routes = Object.values(exports).filter(isRoute);
      expect({ file, routes: routes.length }).toEqual({ file, routes: 1 });
      declared.push(...routes);
    }
    expect(new Set(managementRoutes)).toEqual(new Set(declared));
  });

  test('declare each method and path once, and each operation id once', () => {
    const keys = managementRoutes.map((r) => `${r.method} ${r.path}`);
    expect(new Set(keys).size).toBe(keys.length);
    const ids = managementRoutes.map((r) => r.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test('are described by the OpenAPI document from their own declarations', () => {
    const document = openApiDocument({ maxRollGraceSeconds: 3_600, version: 'test' }) as {
      paths: Record<string, Record<string, { operationId: string; responses: Record<string, unknown> }>>;
    };
    for (const r of managementRoutes) {
      const op = document.paths[`/api/v1${r.path}`]?.[r.method];
      expect({ id: op?.operationId, statuses: Object.keys(op?.responses ?? {}).map(Number) }).toEqual({
        id: r.operationId,
        statuses: expect.arrayContaining([r.ok.status, ...r.errors]),
      });
    }
  });
});
