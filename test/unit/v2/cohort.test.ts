import { routeCohort } from '../../../common/resources/cohort.js';
import type { KeyGrant } from '../../../common/resources/grant.js';
import { callerOf, inCohort } from '../../../gateway/v2/cohort.js';
import { drawVersion } from '../../../gateway/v2/versions.js';

const grant = (id: string, extra: Partial<KeyGrant> = {}): KeyGrant => ({
  id,
  owner: 'alice',
  module: 'platform',
  roles: ['editor'],
  ...extra,
});
const identity = (name: string) => ({ name, account: `@${'0'.repeat(24)}` });

describe('cohorts: the callers a version serves', () => {
  const versions = [
    { name: '1', percent: 100 },
    {
      name: 'acme-build',
      percent: 0,
      cohort: routeCohort({ identities: ['acme'] }, 'model-x', 'acme-build'),
    },
    { name: 'beta', percent: 0, cohort: routeCohort({ keys: ['k-beta'], percent: 30 }, 'model-x', 'beta') },
  ];
  const drawn = (g: KeyGrant, draw = 0.5) => drawVersion(versions, callerOf(g), draw)?.name;

  test("a named identity's keys, every one of them, go to its version, whatever the draw", () => {
    for (const draw of [0, 0.3, 0.99]) {
      expect(drawn(grant('k1', { identity: identity('acme') }), draw)).toBe('acme-build');
      expect(drawn(grant('k2', { identity: identity('acme') }), draw)).toBe('acme-build');
    }
    // A key that names an identity that does not exist is nobody's: never taken for it.
    expect(drawn(grant('k3', { identity: { ...identity('acme'), missing: true } }))).not.toBe('acme-build');
  });

  test('a named key goes to its version, and stays there once rolled', () => {
    expect(drawn(grant('k-beta'))).toBe('beta');
    expect(drawn(grant('k-new', { countsAs: 'k-beta' }))).toBe('beta');
  });

  test('a share of the other callers is chosen by caller, the same on every call, its size as asked', () => {
    const callers = Array.from({ length: 4000 }, (_, i) => grant(`key-${i}`));
    const inBeta = callers.filter((g) => drawn(g) === 'beta');
    expect(inBeta.length / callers.length).toBeGreaterThan(0.27);
    expect(inBeta.length / callers.length).toBeLessThan(0.33);
    // Whatever the call's own draw: it is the caller that is in or out.
    for (const g of callers.slice(0, 200)) {
      const first = drawn(g, 0);
      for (const draw of [0.2, 0.7, 0.999]) expect(drawn(g, draw)).toBe(first);
    }
    // Keys of one identity are one caller: all in, or all out.
    const team = Array.from({ length: 20 }, (_, i) => grant(`t-${i}`, { identity: identity('team-7') }));
    expect(new Set(team.map((g) => drawn(g))).size).toBe(1);
  });

  test("each version draws its own share: one canary's 30% is not the next one's", () => {
    const a = routeCohort({ percent: 30 }, 'model-x', 'a');
    const b = routeCohort({ percent: 30 }, 'model-x', 'b');
    const callers = Array.from({ length: 2000 }, (_, i) => callerOf(grant(`key-${i}`)));
    const both = callers.filter((c) => inCohort(a, c) && inCohort(b, c)).length;
    // Independent draws: about 9% in both, not 30%.
    expect(both / callers.length).toBeLessThan(0.15);
  });

  test('outside every cohort a call takes the percentages, and a cohort version takes none of them', () => {
    const split = [
      { name: '1', percent: 80 },
      { name: '2', percent: 20 },
      { name: 'c', percent: 0, cohort: routeCohort({ identities: ['acme'] }, 'model-x', 'c') },
    ];
    const caller = callerOf(grant('k9'));
    const seen = new Map<string, number>();
    for (let i = 0; i < 1000; i++) {
      const v = drawVersion(split, caller, i / 1000)?.name ?? 'none';
      seen.set(v, (seen.get(v) ?? 0) + 1);
    }
    expect(Object.fromEntries(seen)).toEqual({ '1': 800, '2': 200 });
  });
});
