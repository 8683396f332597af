import { describe, expect, it } from '@jest/globals';
import { HeldMemory } from '../../../gateway/http/held-memory.js';

const MiB = 1024 * 1024;
const kind = { advice: 'send fewer at once' };

describe('HeldMemory', () => {
  it('lets one owner hold a quarter of the budget, and refuses the rest with what it holds and what to do', () => {
    const memory = new HeldMemory(160 * MiB, 10 * MiB);
    expect(memory.perOwner).toBe(40 * MiB);
    for (let i = 0; i < 4; i++) expect(memory.claim('ann', 10 * MiB, kind)).toBeUndefined();
    const refused = memory.claim('ann', 1, kind);
    expect(refused?.code).toBe('rate_limited');
    expect(refused?.status).toBe(429);
    expect(refused?.headers['retry-after']).toBe('1');
    expect(refused?.message).toMatch(
      /hold 41943040 bytes .* past the 41943040 one owner may hold; send fewer at once$/,
    );
    // Nothing was taken by the refusal; another owner is not refused for ann's calls.
    expect(memory.held('ann')).toBe(40 * MiB);
    expect(memory.claim('bob', 10 * MiB, kind)).toBeUndefined();
    memory.release('ann', 10 * MiB);
    expect(memory.claim('ann', 10 * MiB, kind)).toBeUndefined();
  });

  it('refuses every owner once the replica holds its budget, and takes calls again as they end', () => {
    const memory = new HeldMemory(48 * MiB, 10 * MiB);
    for (const owner of ['a', 'b', 'c', 'd']) expect(memory.claim(owner, 12 * MiB, kind)).toBeUndefined();
    const busy = memory.claim('e', 1, kind);
    expect([busy?.status, busy?.code]).toEqual([503, 'gateway_busy']);
    expect(busy?.message).toMatch(
      /hold 50331648 bytes of its memory, near the 50331648 it keeps for them; retry shortly/,
    );
    expect(memory.held()).toBe(48 * MiB);
    memory.release('c', 12 * MiB);
    expect(memory.claim('e', 12 * MiB, kind)).toBeUndefined();
    for (const owner of ['a', 'b', 'd', 'e']) memory.release(owner, 12 * MiB);
    expect(memory.held()).toBe(0);
  });

  it('lets an owner hold at least what one call may (its body, answer and re-encoded answer), within the budget', () => {
    // A sidecar's: a quarter (12 MiB) would refuse one large call on its own.
    expect(new HeldMemory(48 * MiB, 10 * MiB).perOwner).toBe(30 * MiB);
    expect(new HeldMemory(16 * MiB, 10 * MiB).perOwner).toBe(16 * MiB);
    expect(new HeldMemory(160 * MiB, 10 * MiB).perOwner).toBe(40 * MiB);
  });

  it('holds what a call declares at once and only what passes it as its bytes come; gives it all back once', () => {
    const memory = new HeldMemory(160 * MiB, 10 * MiB);
    const call = memory.hold('ann', kind);
    expect(call.reserve(6 * MiB)).toBeUndefined();
    // The declared bytes arrive: nothing more is taken until they pass what was declared.
    for (let i = 0; i < 6; i++) expect(call.take(MiB)).toBeUndefined();
    expect(memory.held('ann')).toBe(6 * MiB);
    expect(call.take(MiB)).toBeUndefined();
    expect(memory.held('ann')).toBe(7 * MiB);
    // A refusal takes nothing, and says what the owner holds.
    const big = memory.hold('ann', kind);
    expect(big.reserve(34 * MiB)?.code).toBe('rate_limited');
    expect(memory.held('ann')).toBe(7 * MiB);
    call.release();
    call.release();
    expect(memory.held('ann')).toBe(0);
    // Nothing is counted for a call once it is done.
    expect(call.take(MiB)).toBeUndefined();
    expect(memory.held()).toBe(0);
  });
});
