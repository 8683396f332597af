import type { Model } from '../../../common/resources/model.js';
import { ModelNames, NAME_KEPT_MS } from '../../../operator/controllers/model/names.js';
import { aModel } from '../../builders/resources.js';

const model = (namespace: string, created: string, deleting = false): Model =>
  aModel(
    'model-iris',
    { storageUri: 's3://models/iris' },
    {
      namespace,
      creationTimestamp: created,
      // The operator's finalizer stays on until its deletion pass (release) is done.
      ...(deleting ? { deletionTimestamp: '2026-11-26T12:00:00Z', finalizers: [FINALIZER] } : {}),
    },
  );

const NOW = Date.parse('2026-11-26T12:00:00Z');
const FINALIZER = 'tollgate.dev/model-routes';

describe('who holds a model name', () => {
  it('the oldest live Model of the name; the others are told who', () => {
    const names = new ModelNames(FINALIZER);
    const alice = model('team-a', '2026-11-01T00:00:00Z');
    const mallory = model('team-m', '2026-11-02T00:00:00Z');
    expect(names.holder([alice, mallory], alice, NOW)).toBeUndefined();
    expect(names.holder([alice, mallory], mallory, NOW)).toEqual({ holder: 'team-a/model-iris' });
  });

  it('a deleted holder’s namespace keeps the name: a team waiting with the name does not take it, a Model made again there does', () => {
    const names = new ModelNames(FINALIZER);
    const mallory = model('team-m', '2026-11-02T00:00:00Z');
    const deleting = model('team-a', '2026-11-01T00:00:00Z', true);
    names.release([deleting, mallory], deleting, NOW);
    // The moment alice's Model is deleting, and after it is gone: mallory still waits.
    expect(names.holder([deleting, mallory], mallory, NOW)).toEqual({
      holder: 'team-a/model-iris',
      keptUntil: new Date(NOW + NAME_KEPT_MS),
    });
    expect(names.holder([mallory], mallory, NOW + 1_000)).toMatchObject({ holder: 'team-a/model-iris' });
    // alice makes it again, newer than mallory's: hers, as the namespace kept it.
    const again = model('team-a', '2026-11-26T12:00:05Z');
    expect(names.holder([mallory, again], again, NOW + 5_000)).toBeUndefined();
    // Once alice's new Model is there, the oldest-live rule would give it to mallory: kept wins while it lasts.
    expect(names.holder([mallory, again], mallory, NOW + 5_000)).toMatchObject({
      holder: 'team-a/model-iris',
    });
    // Past the time first kept, alice's new Model still holds it: hers while it lives.
    expect(names.holder([mallory, again], mallory, NOW + 2 * NAME_KEPT_MS)).toEqual({
      holder: 'team-a/model-iris',
      remade: true,
    });
    expect(names.holder([mallory, again], again, NOW + 2 * NAME_KEPT_MS)).toBeUndefined();
    // Deleted again (with the time held the operator recorded in its status), and not made again
    // in time: the next oldest takes it.
    const deletedAgain: Model = {
      ...again,
      metadata: { ...again.metadata, deletionTimestamp: '2026-11-26T13:00:00Z', finalizers: [FINALIZER] },
      status: { nameHeldSince: names.since([mallory, again], again, NOW + 2 * NAME_KEPT_MS) },
    };
    expect(deletedAgain.status?.nameHeldSince).toBe('2026-11-01T00:00:00.000Z');
    names.release([mallory, deletedAgain], deletedAgain, NOW + 2 * NAME_KEPT_MS);
    expect(names.holder([mallory], mallory, NOW + 3 * NAME_KEPT_MS - 1)).toMatchObject({
      keptUntil: expect.any(Date),
    });
    expect(names.holder([mallory], mallory, NOW + 3 * NAME_KEPT_MS + 1)).toBeUndefined();
  });

  it('a Model made again inherits the time its namespace held the name, recorded in its status: it keeps the name across an operator restart', () => {
    const names = new ModelNames(FINALIZER);
    const mallory = model('team-m', '2026-11-02T00:00:00Z');
    const deleting = model('team-a', '2026-11-01T00:00:00Z', true);
    names.release([deleting, mallory], deleting, NOW);
    const again = model('team-a', '2026-11-26T12:00:05Z');
    // What the operator writes into the new Model's status (status.nameHeldSince).
    expect(names.since([mallory, again], again, NOW + 5_000)).toBe('2026-11-01T00:00:00.000Z');
    expect(names.since([mallory, again], mallory, NOW + 5_000)).toBe('2026-11-02T00:00:00.000Z');
    const recorded: Model = { ...again, status: { nameHeldSince: '2026-11-01T00:00:00.000Z' } };
    // A restarted operator remembers nothing kept, and reads the status.
    const restarted = new ModelNames(FINALIZER);
    expect(restarted.holder([mallory, recorded], mallory, NOW + 10 * NAME_KEPT_MS)).toEqual({
      holder: 'team-a/model-iris',
    });
    expect(restarted.holder([mallory, recorded], recorded, NOW + 10 * NAME_KEPT_MS)).toBeUndefined();
    // Without the record, the creation times decide: the newer Model made again would lose it.
    expect(restarted.holder([mallory, again], again, NOW)).toEqual({ holder: 'team-m/model-iris' });
  });

  it('a Model being deleted holds its name until its deletion is handled: a waiting one deleted meanwhile gets nothing', () => {
    const names = new ModelNames(FINALIZER);
    const alice = model('team-a', '2026-11-01T00:00:00Z', true);
    const mallory = model('team-m', '2026-11-02T00:00:00Z', true);
    // mallory's deletion handled first, while alice's is under way: alice still holds the name.
    expect(names.holder([alice, mallory], mallory, NOW)).toEqual({ holder: 'team-a/model-iris' });
    names.release([alice, mallory], mallory, NOW);
    names.release([alice], alice, NOW);
    const waiting = model('team-m', '2026-11-26T12:00:01Z');
    expect(names.holder([waiting], waiting, NOW + 1_000)).toMatchObject({ holder: 'team-a/model-iris' });
  });

  it('a Model that did not hold its name keeps nothing when deleted', () => {
    const names = new ModelNames(FINALIZER);
    const alice = model('team-a', '2026-11-01T00:00:00Z');
    const mallory = model('team-m', '2026-11-02T00:00:00Z', true);
    names.release([alice, mallory], mallory, NOW);
    const later = model('team-m', '2026-11-26T12:00:05Z');
    expect(names.holder([alice, later], alice, NOW)).toBeUndefined();
    expect(names.holder([alice, later], later, NOW)).toEqual({ holder: 'team-a/model-iris' });
  });
});
