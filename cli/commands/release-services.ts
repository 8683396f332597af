import type { Command } from 'commander';
import { loadKubeConfig } from '../../operator/kube-config.js';
import { KubeRouteHold, ROUTE_FINALIZER } from '../../operator/route-hold.js';

/**
 * `tollgate release-services`: takes the operator's route finalizer off every Service. The chart
 * runs it after `helm uninstall`, when no operator is left to do it.
 */
export function register(program: Command): void {
  program
    .command('release-services')
    .description(
      `take the ${ROUTE_FINALIZER} finalizer off every Service (after the operator is uninstalled)`,
    )
    .option('--kubeconfig <path>', 'kubeconfig (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)')
    .option('--namespace <ns>', 'only this namespace (the one the operator watched; default: all)')
    .action(async (flags: { kubeconfig?: string; namespace?: string }) => {
      try {
        const hold = new KubeRouteHold(loadKubeConfig(flags.kubeconfig));
        const { released, failed } = await hold.releaseAll(flags.namespace);
        for (const svc of released) process.stdout.write(`released service ${svc}\n`);
        for (const why of failed) process.stderr.write(`tollgate release-services: not released: ${why}\n`);
        process.stdout.write(`${released.length} Service${released.length === 1 ? '' : 's'} released\n`);
        if (failed.length > 0) process.exitCode = 1;
      } catch (e) {
        process.stderr.write(`tollgate release-services: ${e instanceof Error ? e.message : String(e)}\n`);
        process.exitCode = 1;
      }
    });
}
