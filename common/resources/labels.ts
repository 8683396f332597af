/**
 * The labels and annotations that are part of Tollgate's contract with users' resources, read by
 * the operator (routes) and the gateway's models resource alike.
 */

/** A Service with both labels is a workflow service: `/events/bda/<workflow>/<service>/...`. */
export const WORKFLOW_LABEL = 'tollgate.dev/workflow';
export const SERVICE_LABEL = 'tollgate.dev/service';
/**
 * Who created a Model through the models platform API (an annotation, for people: a workflow's
 * owner is its Workflow record's, never a label or annotation a tenant can write).
 */
export const OWNER_KEY = 'tollgate.dev/owner';
/** Optional annotation: the port to route to when the Service has several. */
export const PORT_ANNOTATION = 'tollgate.dev/port';
/**
 * Standalone mode only: the base URL a workflow Service manifest routes to (there is no cluster
 * DNS name on one machine). The operator on a cluster ignores it: there a Service's address is its
 * own, so a Service cannot point Tollgate's traffic anywhere else.
 */
export const URL_ANNOTATION = 'tollgate.dev/url';
/**
 * Standalone mode only: `own` gives a Model an MLServer process of its own instead of the shared
 * one (isolation of its Python modules and its crashes). On a cluster each Model is its own
 * Deployment anyway.
 */
export const RUNTIME_ANNOTATION = 'tollgate.dev/runtime';
/**
 * `"true"` on a workflow Service whose pods answer through a Tollgate sidecar: its route says so,
 * and the central gateway hands the sidecar a signed grant with each call.
 */
export const SIDECAR_ANNOTATION = 'tollgate.dev/sidecar';

/** On a Secret in Tollgate's own namespace: the Models there (made through the platform API) may name it. */
export const MODEL_CREDENTIALS_LABEL = 'tollgate.dev/model-credentials';
/**
 * Beside that label, optional: the owners (comma-separated subjects, as the platform API records
 * them in OWNER_KEY) whose Models alone may name the Secret. Without it, every API user's may.
 */
export const MODEL_OWNERS_ANNOTATION = 'tollgate.dev/model-owners';
