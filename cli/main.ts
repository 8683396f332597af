import { Command } from 'commander';

/**
 * The `tollgate` CLI. Each subcommand lives in its own module under cli/commands/ and registers
 * itself here; the list below is the only place that knows them all.
 */
const program = new Command()
  .name('tollgate')
  .description('Kubernetes-native API keys, a key-checking gateway, and V2 serving for scikit-learn models')
  .version('0.1.0');

const commands: Array<() => Promise<{ register: (p: Command) => void }>> = [
  () => import('./commands/operator.js'),
  () => import('./commands/pull.js'),
  () => import('./commands/validate.js'),
  () => import('./commands/gateway.js'),
  () => import('./commands/sidecar.js'),
  () => import('./commands/token.js'),
  () => import('./commands/route.js'),
  () => import('./commands/dev.js'),
];

for (const load of commands) (await load()).register(program);

await program.parseAsync(process.argv);
