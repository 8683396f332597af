/**
 * A Model's name is `model-<id>`: also the name of its Deployment and Service and of the model
 * inside MLServer, so it must be a DNS-1035 label (lowercase, digits and '-', at most 63 characters).
 * crds/models.yaml enforces the same rule at apply time (a unit test keeps the two equal).
 */
export const MODEL_NAME_PATTERN = '^model-[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
export const MODEL_NAME_MAX_LENGTH = 63;

const modelNameRe = new RegExp(MODEL_NAME_PATTERN);

export function isModelName(name: string): boolean {
  return name.length <= MODEL_NAME_MAX_LENGTH && modelNameRe.test(name);
}
