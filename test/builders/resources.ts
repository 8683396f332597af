/**
 * Builders for the resources tests make: a Model, a Workflow record, an ApiKey. Each takes what
 * the test is about and fills in the rest as a user's manifest would, so a test reads as its case
 * and a change to a resource's shape is one edit here (as Unkey's test harness seeds its keys).
 */
import { stringify } from 'yaml';
import { MODEL_API_VERSION, MODEL_KIND, type Model } from '../../common/resources/model.js';
import { WORKFLOW_API_VERSION, WORKFLOW_KIND, type Workflow } from '../../common/resources/workflow.js';

type Metadata<T extends { metadata: object }> = Partial<T['metadata']>;

/** A Model named `name` with `spec` (a store or versions: a Model has no default for either). */
export function aModel(name: string, spec: Model['spec'], metadata: Metadata<Model> = {}): Model {
  return { apiVersion: MODEL_API_VERSION, kind: MODEL_KIND, metadata: { name, ...metadata }, spec };
}

/** The same Model as a manifest file's text, for `tollgate dev`'s state folder and kubectl. */
export function modelManifest(name: string, spec: Model['spec'], metadata: Metadata<Model> = {}): string {
  return stringify(aModel(name, spec, metadata));
}

/** The record of a workflow `workflow`, owned by `owner`, whose services live in `namespaces`. */
export function aWorkflow(
  workflow: string,
  owner: string,
  namespaces: string[],
  metadata: Metadata<Workflow> = {},
): Workflow {
  return {
    apiVersion: WORKFLOW_API_VERSION,
    kind: WORKFLOW_KIND,
    metadata: { name: workflow, ...metadata },
    spec: { workflow, owner, namespaces },
  };
}
