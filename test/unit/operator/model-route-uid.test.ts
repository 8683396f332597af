import { describe, expect, it } from '@jest/globals';
import { routeSchema } from '../../../common/resources/grant.js';
import { manifestUid } from '../../../common/resources/object-meta.js';
import { routeOf } from '../../../operator/controllers/model/route-of.js';
import { aModel } from '../../builders/resources.js';

type Routing = Parameters<typeof routeOf>[1];

/** One ready replica at an address: all a route needs of a Model's runtime here. */
const served = {
  ready: [],
  shadow: undefined,
  main: {
    version: { name: undefined, isDefault: true, percent: 100 },
    state: { url: 'http://10.96.0.9:8080', readyReplicas: 1 },
    cold: false,
  },
} as unknown as Routing;

const routeFor = (name: string, uid: string | undefined) =>
  routeOf(
    aModel(name, { storageUri: 's3://models/m' }, { namespace: 'team-a', ...(uid ? { uid } : {}) }),
    served,
    undefined,
  );

describe("a model's route names its Model's uid", () => {
  it('as the API server gave it, and as the standalone operator gives a manifest of the longest name', () => {
    const apiServer = routeFor('model-iris', '0b6c1f8e-4d2a-4c1e-9f7a-2d8e5b3c9a10');
    expect(apiServer.uid).toBe('0b6c1f8e-4d2a-4c1e-9f7a-2d8e5b3c9a10');
    expect(routeSchema.safeParse(apiServer).success).toBe(true);
    // A name of 63 characters: its manifest uid is 72, and the route is still written.
    const longest = `model-${'x'.repeat(57)}`;
    const manifest = routeFor(longest, manifestUid(longest));
    expect(manifest.uid).toBe(manifestUid(longest));
    expect(routeSchema.safeParse(manifest).success).toBe(true);
  });

  it('never one that would be more than one segment of a key or a prefix: its records are then kept by name', () => {
    for (const uid of ['../team-b', 'a/b', '.hidden', 'x'.repeat(200), 'uid with spaces']) {
      const route = routeFor('model-iris', uid);
      expect(route).not.toHaveProperty('uid');
      expect(routeSchema.safeParse(route).success).toBe(true);
      // Nor is such a uid taken from a route entry.
      expect(routeSchema.safeParse({ ...route, uid }).success).toBe(false);
    }
  });
});
