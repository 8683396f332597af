import { describe, expect, it } from '@jest/globals';
import { createLogger } from '../../../common/logger.js';
import { Background } from '../../../gateway/background.js';

describe("the gateway's background services", () => {
  it('start in the order they were added and stop in the reverse one; one that fails to stop leaves the rest stopping', async () => {
    const seen: string[] = [];
    const background = new Background(createLogger('test', 'silent'));
    background.add('redis', {
      start: async () => void seen.push('start redis'),
      stop: async () => void seen.push('stop redis'),
    });
    background.add('flusher', {
      start: () => void seen.push('start flusher'),
      stop: () => {
        seen.push('stop flusher');
        throw new Error('disk full');
      },
    });
    // A pool has nothing to start, only to close.
    background.add('pool', { stop: () => void seen.push('stop pool') });
    await background.start();
    await expect(background.stop()).resolves.toBeUndefined();
    expect(seen).toEqual(['start redis', 'start flusher', 'stop pool', 'stop flusher', 'stop redis']);
  });
});
