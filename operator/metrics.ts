import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The operator's Prometheus metrics, on its own registry (served at /metrics). */
export class OperatorMetrics {
  readonly registry = new Registry();
  readonly reconciles = new Counter({
    name: 'tollgate_operator_reconcile_total',
    help: 'Reconciles by controller and result (success, error, requeue).',
    labelNames: ['controller', 'result'] as const,
    registers: [this.registry],
  });
  readonly reconcileErrors = new Counter({
    name: 'tollgate_operator_reconcile_errors_total',
    help: 'Reconciles that failed and were retried with backoff.',
    labelNames: ['controller'] as const,
    registers: [this.registry],
  });
  readonly reconcileDuration = new Histogram({
    name: 'tollgate_operator_reconcile_duration_seconds',
    help: 'Time spent in one reconcile.',
    labelNames: ['controller'] as const,
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10],
    registers: [this.registry],
  });
  readonly queueDepth = new Gauge({
    name: 'tollgate_operator_workqueue_depth',
    help: 'Keys waiting in a controller work queue.',
    labelNames: ['controller'] as const,
    registers: [this.registry],
  });
  readonly leader = new Gauge({
    name: 'tollgate_operator_leader',
    help: '1 while this replica holds the leader Lease.',
    registers: [this.registry],
  });
  readonly termStartFailures = new Counter({
    name: 'tollgate_operator_term_start_failures_total',
    help: 'Times this replica led but could not start its controllers (retried with backoff).',
    registers: [this.registry],
  });

  readonly admissions = new Counter({
    name: 'tollgate_operator_webhook_admissions_total',
    help: 'Pods seen by the sidecar webhook, by result (injected, skipped, refused, error).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly webhookCertRotations = new Counter({
    name: 'tollgate_operator_webhook_certificate_issued_total',
    help: 'Webhook serving certificates issued by this replica (first issue and rotations).',
    registers: [this.registry],
  });

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    if (opts.defaultMetrics) collectDefaultMetrics({ register: this.registry });
  }
}
