import {
  MODEL_API_VERSION,
  MODEL_KIND,
  type Model,
  type ModelStatus,
} from '../../../common/resources/model.js';
import type { EventRecorder } from '../../events.js';
import { withConflictRetry } from '../../framework/controller.js';
import { isConflict, type ResourceSource } from '../../framework/resource-source.js';
import type { ModelNames } from './names.js';

/**
 * The status part of the Model reconciler: writes the status a pass computed (only when it
 * differs), with since when the Model holds its name, and tells a change of phase as an event.
 */
export class StatusWriter {
  constructor(
    private readonly models: ResourceSource<Model>,
    private readonly names: ModelNames,
    private readonly events: EventRecorder,
  ) {}

  async write(model: Model, desired: (m: Model, now: Date) => ModelStatus): Promise<void> {
    const ref = { namespace: model.metadata.namespace ?? 'default', name: model.metadata.name };
    const before = model.status;
    // A Model that holds its name records since when: it keeps the name, made again, across restarts.
    const withName = (m: Model, now: Date): ModelStatus => {
      const status = boundedMessages(desired(m, now));
      const models = this.models.list();
      const since = this.names.holder(models, m) === undefined ? this.names.since(models, m) : undefined;
      return since === undefined ? status : { ...status, nameHeldSince: since };
    };
    const status = withName(model, new Date());
    if (sameStatus(before, status)) return;
    const written = await withConflictRetry(
      model,
      () => this.models.read(ref),
      (m) => this.models.updateStatus({ ...m, status: withName(m, new Date()) }),
      isConflict,
    );
    if (!written || before?.phase === status.phase) return;
    const ready = status.conditions?.find((c) => c.type === 'Ready');
    const settings = status.conditions?.find((c) => c.type === 'SettingsValid');
    const cause = status.phase === 'Failed' && settings?.status === 'False' ? settings : ready;
    await this.events.record(
      { ...written, apiVersion: MODEL_API_VERSION, kind: MODEL_KIND },
      status.phase === 'Failed' ? 'Warning' : 'Normal',
      cause?.reason ?? status.phase ?? 'Unknown',
      `${status.phase}: ${cause?.message ?? ''}`,
    );
  }
}

/**
 * Longest message written in a status: what a store, a pod or a settings file says is quoted in
 * it, and a condition's message past the CRD's 32,768 characters would have the whole status write
 * refused (the Model then showing its last status while nothing of it serves).
 */
export const STATUS_MESSAGE_MAX = 4_000;

const CUT = '… (cut short)';
const clip = (message: string): string =>
  message.length <= STATUS_MESSAGE_MAX ? message : message.slice(0, STATUS_MESSAGE_MAX - CUT.length) + CUT;

/** The status with every message it holds at most STATUS_MESSAGE_MAX characters long. */
export function boundedMessages(status: ModelStatus): ModelStatus {
  const bounded: ModelStatus = { ...status };
  if (status.conditions)
    bounded.conditions = status.conditions.map((c) => ({ ...c, message: clip(c.message) }));
  if (status.versions)
    bounded.versions = status.versions.map((v) =>
      v.message === undefined ? v : { ...v, message: clip(v.message) },
    );
  if (status.rollout?.message !== undefined)
    bounded.rollout = { ...status.rollout, message: clip(status.rollout.message) };
  return bounded;
}

/** Field order and absent fields do not matter: the API server returns its own order. */
export function sameStatus(a: ModelStatus | undefined, b: ModelStatus): boolean {
  return canonical(a ?? {}) === canonical(b);
}

function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, val: unknown) =>
    val && typeof val === 'object' && !Array.isArray(val)
      ? Object.fromEntries(
          Object.entries(val as Record<string, unknown>)
            .filter(([, x]) => x !== undefined)
            .sort(([x], [y]) => x.localeCompare(y)),
        )
      : val,
  );
}
