/**
 * Whether the webhook can put a sidecar in a namespace's pods, as the operator was told to run it:
 * a Model that asks for a sidecar where none would come would wait for ever on pods whose MLServer
 * listens on their loopback only, so it is refused with this reason instead.
 */
export type SidecarPlacement = (namespace: string) => string | undefined;

export function sidecarPlacement(
  webhook: { ownNamespace: string; excluded: readonly string[] } | undefined,
): SidecarPlacement {
  const fix = 'set spec.gateway: central';
  return (namespace) => {
    if (webhook === undefined)
      return `the sidecar webhook is off (the chart's sidecar.webhook.enabled), so nothing puts a sidecar in this model's pods: ${fix}, or turn the webhook on`;
    if (namespace === webhook.ownNamespace)
      return `namespace "${namespace}" is Tollgate's own, where the webhook puts no sidecar: ${fix} (the chart's NetworkPolicy admits only the gateways to models there), or serve the model from another namespace`;
    if (webhook.excluded.includes(namespace))
      return `namespace "${namespace}" is in the chart's sidecar.webhook.excludeNamespaces, where the webhook puts no sidecar: ${fix}, or serve the model from another namespace`;
    return undefined;
  };
}
