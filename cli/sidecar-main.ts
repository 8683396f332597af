import { Command } from 'commander';
import { TOLLGATE_VERSION } from '../common/version.js';
import { register } from './commands/sidecar.js';

/**
 * `tollgate sidecar` on its own: the entry tools/bundle/sidecar.mjs bundles, so a sidecar loads
 * only what it runs (bin/tollgate.js sends the sidecar command here).
 */
const program = new Command().name('tollgate').version(TOLLGATE_VERSION);
register(program);
await program.parseAsync(process.argv);
