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
  group: z
    .array(z.string().min(1, '--group cannot be empty').max(255, '--group is at most 255 characters'))
    .default([]),
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
    .option(
      '--group <name>',
      "a group the user belongs to, in the token's groups claim (repeatable; the gateway's adminGroups make administrators)",
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .action(async (raw: unknown) => {
      const parsed = flagsSchema.safeParse(raw);
      if (!parsed.success) {
        process.stderr.write(`tollgate token: ${parsed.error.issues[0]?.message ?? 'invalid flags'}\n`);
        process.exit(2);
      }
      const { user, stateDir, ttl, group } = parsed.data;
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
      process.stdout.write(`${await issuer.mint(user, { ttlSeconds: ttl, groups: group })}\n`);
    });
}
