import { describe, expect, it } from '@jest/globals';
import type { GatewayServices } from '../../../gateway/services.js';
import type { RuntimeClient } from '../../../gateway/v2/runtime-client.js';
import { ShadowTraffic } from '../../../gateway/v2/shadow/shadow-traffic.js';
import type { ResolvedVersion } from '../../../gateway/routing/route-table.js';

/** The copies' budget alone: drawing never sends anything, so only the metrics are needed. */
function traffic(): { shadows: ShadowTraffic; dropped: string[]; refused: string[] } {
  const dropped: string[] = [];
  const refused: string[] = [];
  const s = {
    metrics: {
      shadowCall: (model: string, _v: string, outcome: string) => void dropped.push(`${model} ${outcome}`),
      shareRefused: (share: string, team: string) => void refused.push(`${share} ${team}`),
    },
    // A wake-up asked of a shadow asleep, published for the operator.
    redis: {
      publish: (_channel: string, message: string) => (dropped.push(`wake ${message}`), Promise.resolve(1)),
    },
  } as unknown as GatewayServices;
  return { shadows: new ShadowTraffic(s, {} as RuntimeClient), dropped, refused };
}

const caller = { identity: undefined, key: 'k1', keyId: 'k1' };
const shadow = { name: '2', percent: 100, origin: 'http://127.0.0.1:1', basePath: '' } as ResolvedVersion;

describe('shadow copies in flight', () => {
  it('hold at most 8 per team, however many models it has; another team still gets its copies', () => {
    const { shadows, dropped, refused } = traffic();
    // team-a's four models, two copies each: its share.
    const held = ['model-a1', 'model-a2', 'model-a3', 'model-a4'].flatMap((m) => [
      shadows.drawn(m, 'team-a', shadow, caller),
      shadows.drawn(m, 'team-a', shadow, caller),
    ]);
    expect(held.every((t) => t !== undefined)).toBe(true);
    // A fifth model of team-a's gets none, and it is counted.
    expect(shadows.drawn('model-a5', 'team-a', shadow, caller)).toBeUndefined();
    expect(dropped).toEqual(['model-a5 dropped']);
    // The refusal is team-a's, as the share is.
    expect(refused).toEqual(['shadow_copies team-a']);
    // team-b's copies go on beside them.
    expect(shadows.drawn('model-b1', 'team-b', shadow, caller)).toBeDefined();
    // A copy done gives its place back to its team.
    held[0]?.release();
    expect(shadows.drawn('model-a5', 'team-a', shadow, caller)).toBeDefined();
  });

  it('keep the last quarter of the 32 for teams holding fewer than two: three slow teams leave the others their first copies', () => {
    const { shadows, refused } = traffic();
    for (const team of ['t1', 't2', 't3'])
      for (let i = 0; i < 8; i++) expect(shadows.drawn(`model-${team}`, team, shadow, caller)).toBeDefined();
    // 24 held: a fourth team gets two, and no more.
    expect([1, 2, 3].map(() => shadows.drawn('model-t4', 't4', shadow, caller) !== undefined)).toEqual([
      true,
      true,
      false,
    ]);
    // So do the next teams, until the 32 are held.
    for (const team of ['t5', 't6', 't7'])
      expect([1, 2].map(() => shadows.drawn(`model-${team}`, team, shadow, caller) !== undefined)).toEqual([
        true,
        true,
      ]);
    expect(shadows.drawn('model-t8', 't8', shadow, caller)).toBeUndefined();
    expect(refused).toEqual(['shadow_copies t4', 'shadow_copies t8']);
  });

  it('drop a copy of a shadow that is asleep without counting it against its team (it is woken instead)', () => {
    const { shadows, dropped, refused } = traffic();
    const cold = { ...shadow, cold: true } as ResolvedVersion;
    expect(shadows.drawn('model-a', 'team-a', cold, caller)).toBeUndefined();
    expect(dropped).toEqual(['wake {"model":"model-a","version":"2"}', 'model-a dropped']);
    expect(refused).toEqual([]);
  });
});
