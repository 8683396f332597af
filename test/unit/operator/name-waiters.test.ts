import type { Model } from '../../../common/resources/model.js';
import { NameWaiters } from '../../../operator/controllers/model/name-waiters.js';
import type { ResourceSource } from '../../../operator/framework/resource-source.js';
import { aModel } from '../../builders/resources.js';

const model = (namespace: string, name: string): Model => aModel(name, {}, { namespace });

describe('the Models waiting for a name', () => {
  it('are woken now and when the name’s kept time is up; the one that let it go and other names are not', async () => {
    const all = [
      model('team-a', 'model-x'),
      model('team-b', 'model-x'),
      model('team-c', 'model-x'),
      model('team-b', 'model-y'),
    ];
    const waiters = new NameWaiters({ list: () => all } as unknown as ResourceSource<Model>);
    const woken: string[] = [];
    await waiters.start((ref) => woken.push(`${ref.namespace}/${ref.name}`));
    waiters.wake('model-x', { namespace: 'team-a', name: 'model-x' }, Date.now() + 50);
    expect(woken).toEqual(['team-b/model-x', 'team-c/model-x']);
    await new Promise((r) => setTimeout(r, 120));
    expect(woken).toEqual(['team-b/model-x', 'team-c/model-x', 'team-b/model-x', 'team-c/model-x']);
    // Stopped (the term over): a wake still due is dropped.
    waiters.wake('model-x', { namespace: 'team-a', name: 'model-x' }, Date.now() + 50);
    await waiters.stop();
    await new Promise((r) => setTimeout(r, 100));
    expect(woken).toHaveLength(6);
  });
});
