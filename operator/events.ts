import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import type { Logger } from '../common/logger.js';
import type { Resource } from './framework/resource-source.js';

export type EventType = 'Normal' | 'Warning';

/** Records what happened to a resource: Kubernetes Events, or log lines in standalone mode. */
export interface EventRecorder {
  record(
    obj: Resource & { apiVersion: string; kind: string },
    type: EventType,
    reason: string,
    message: string,
  ): Promise<void>;
}

export const COMPONENT = 'tollgate-operator';

/** core/v1 Events, as `kubectl describe` shows them. A failure to record is logged, never fatal. */
export class KubeEventRecorder implements EventRecorder {
  private readonly api: CoreV1Api;
  constructor(
    kc: KubeConfig,
    private readonly log: Logger,
  ) {
    this.api = kc.makeApiClient(CoreV1Api);
  }

  async record(
    obj: Resource & { apiVersion: string; kind: string },
    type: EventType,
    reason: string,
    message: string,
  ): Promise<void> {
    const namespace = obj.metadata.namespace ?? 'default';
    const now = new Date();
    try {
      await this.api.createNamespacedEvent({
        namespace,
        body: {
          metadata: { name: `${obj.metadata.name}.${randomBytes(8).toString('hex')}`, namespace },
          involvedObject: {
            apiVersion: obj.apiVersion,
            kind: obj.kind,
            name: obj.metadata.name,
            namespace,
            ...(obj.metadata.uid ? { uid: obj.metadata.uid } : {}),
            ...(obj.metadata.resourceVersion ? { resourceVersion: obj.metadata.resourceVersion } : {}),
          },
          type,
          reason,
          message: message.slice(0, 1024),
          source: { component: COMPONENT },
          reportingComponent: COMPONENT,
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      });
    } catch (err) {
      this.log.warn(
        { err, reason, object: `${namespace}/${obj.metadata.name}` },
        'could not record an event',
      );
    }
  }
}

/** Standalone mode: events become log lines. */
export class LogEventRecorder implements EventRecorder {
  constructor(private readonly log: Logger) {}
  async record(
    obj: Resource & { kind: string },
    type: EventType,
    reason: string,
    message: string,
  ): Promise<void> {
    this.log[type === 'Warning' ? 'warn' : 'info'](
      { object: `${obj.kind}/${obj.metadata.name}`, reason },
      message,
    );
  }
}
