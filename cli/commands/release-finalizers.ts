import type { Command } from 'commander';
import { loadKubeConfig } from '../../operator/kube-config.js';
import { releaseFinalizers } from '../../operator/release-finalizers.js';

/**
 * `tollgate release-finalizers`: takes the operator's finalizers off every Service, Model and
 * ApiKey. The chart runs it after `helm uninstall`, when no operator is left to do it.
 */
export function register(program: Command): void {
  program
    .command('release-finalizers')
    .description(
      "take the operator's finalizers off every Service, Model and ApiKey (after the operator is uninstalled)",
    )
    .option('--kubeconfig <path>', 'kubeconfig (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)')
    .option('--namespace <ns>', 'only this namespace (the one the operator watched; default: all)')
    .action(async (flags: { kubeconfig?: string; namespace?: string }) => {
      try {
        const { released, failed } = await releaseFinalizers(
          loadKubeConfig(flags.kubeconfig),
          flags.namespace,
        );
        for (const what of released) process.stdout.write(`released ${what}\n`);
        for (const why of failed) process.stderr.write(`tollgate release-finalizers: not released: ${why}\n`);
        process.stdout.write(`${released.length} released\n`);
        if (failed.length > 0) process.exitCode = 1;
      } catch (e) {
        process.stderr.write(`tollgate release-finalizers: ${e instanceof Error ? e.message : String(e)}\n`);
        process.exitCode = 1;
      }
    });
}
