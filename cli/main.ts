import { TOLLGATE_VERSION } from '../common/version.js';
import { Command } from 'commander';

/**
 * The `tollgate` CLI. Each subcommand lives in its own module under cli/commands/ and registers
 * itself here; the list below is the only place that knows them all.
 */
const program = new Command()
  .name('tollgate')
  .description('Kubernetes-native API keys, a key-checking gateway, and V2 serving for scikit-learn models')
  .version(TOLLGATE_VERSION);

const commands: Record<string, () => Promise<{ register: (p: Command) => void }>> = {
  operator: () => import('./commands/operator.js'),
  pull: () => import('./commands/pull.js'),
  validate: () => import('./commands/validate.js'),
  gateway: () => import('./commands/gateway.js'),
  sidecar: () => import('./commands/sidecar.js'),
  token: () => import('./commands/token.js'),
  key: () => import('./commands/key.js'),
  route: () => import('./commands/route.js'),
  'release-finalizers': () => import('./commands/release-finalizers.js'),
  dev: () => import('./commands/dev.js'),
};

// Only the command being run is loaded: a sidecar or a puller container should not carry the
// Kubernetes client and the rest in memory. Help, or an unknown command, loads them all.
const named = process.argv[2];
const wanted = named !== undefined && named in commands ? [commands[named]] : Object.values(commands);
for (const load of wanted) if (load !== undefined) (await load()).register(program);

await program.parseAsync(process.argv);
