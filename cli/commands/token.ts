import type { Command } from 'commander';
import { z } from 'zod';
import path from 'node:path';
import { LocalIssuer } from '../../gateway/auth/local-issuer.js';
import { defaultStateDir, DEMO_ENV_FILE, STATE_DIR_HELP } from '../state-dir.js';

const flagsSchema = z.object({
  user: z.string().min(1, '--user cannot be empty').max(255, '--user is at most 255 characters'),
  stateDir: z.string().min(1),
  ttl: z.coerce
    .number()
    .int()
    .min(60, '--ttl is at least 60 seconds')
    .max(30 * 86_400, '--ttl is at most 30 days'),
});

/**
 * `tollgate token --user <name>`: a bearer token from standalone mode's identity provider (the
 * signing key in the state directory; the gateway publishes its JWKS). It never makes the key: the
 * gateway does, so a token is always signed with the key a running gateway trusts. With a real
 * OIDC provider, get tokens from it instead.
 */
export function register(program: Command): void {
  program
    .command('token')
    .description('Mint a bearer token for the management API from the standalone signing key')
    .requiredOption('--user <name>', 'the user the token identifies (its subject)')
    .option('--state-dir <dir>', STATE_DIR_HELP, defaultStateDir())
    .option('--ttl <seconds>', 'lifetime of the token in seconds', '43200')
    .action(async (raw: unknown) => {
      const parsed = flagsSchema.safeParse(raw);
      if (!parsed.success) {
        process.stderr.write(`tollgate token: ${parsed.error.issues[0]?.message ?? 'invalid flags'}\n`);
        process.exit(2);
      }
      const { user, stateDir, ttl } = parsed.data;
      const issuer = await LocalIssuer.existing(stateDir);
      if (issuer === undefined) {
        process.stderr.write(
          `tollgate token: no signing key at ${LocalIssuer.keyFile(path.resolve(stateDir))}. ` +
            'The standalone gateway makes it when it starts: pass the --state-dir of the running ' +
            '`tollgate dev` (the demo: `source ' +
            DEMO_ENV_FILE +
            '`, or --state-dir .tollgate/demo). Nothing was created.\n',
        );
        process.exit(1);
      }
      process.stdout.write(`${await issuer.mint(user, { ttlSeconds: ttl })}\n`);
    });
}
