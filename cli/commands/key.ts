import type { Command } from 'commander';
import { stringify } from 'yaml';
import { z } from 'zod';
import { generateKey, hashKey, keyStart } from '../../common/apikey/format.js';
import { apiKeySpecSchema, newApiKey, newKeyId } from '../../common/resources/apikey.js';
import { WORKFLOW_ID_PATTERN } from '../../common/resources/workflow-service.js';

const flagsSchema = z
  .object({
    module: z.enum(['bda', 'platform'], { error: '--module is bda or platform' }),
    role: z.array(z.string().min(1, '--role cannot be empty')).min(1, 'give at least one --role'),
    owner: z.string().min(1, '--owner cannot be empty').max(255, '--owner is at most 255 characters'),
    name: z.string().max(100, '--name is at most 100 characters').optional(),
    namespace: z.string().min(1, '--namespace cannot be empty'),
  })
  .superRefine((f, ctx) => {
    if (f.module !== 'bda') return;
    if (f.role.length !== 1)
      ctx.addIssue({ code: 'custom', message: 'a bda key has exactly one --role: the id of its workflow' });
    else if (!WORKFLOW_ID_PATTERN.test(f.role[0]!))
      ctx.addIssue({
        code: 'custom',
        message: `--role ${f.role[0]!} is not a workflow id (letters, digits, "-", "_" and ".")`,
      });
  });

/**
 * `tollgate key manifest`: a new key for a team that keeps its ApiKeys in Git. The manifest (on
 * stdout) holds only the key's SHA-256 and its first characters, so the repository never holds
 * anything that calls; the key itself goes to stderr, once, for its holder to store. Applied with
 * `kubectl apply` (or Argo CD, Flux) in Tollgate's namespace, it works as soon as the operator has
 * listed it (docs/keys.md, "Keys kept in Git").
 */
export function register(program: Command): void {
  program
    .command('key')
    .description('Keys kept in Git')
    .command('manifest')
    .description('Make a new key: its ApiKey manifest (the hash only) on stdout, the key itself on stderr')
    .requiredOption('--module <module>', 'bda (a workflow) or platform')
    .requiredOption(
      '--role <role>',
      'the workflow id (bda), or a platform role (repeatable)',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .requiredOption('--owner <user>', 'the user the key belongs to (for bda, the workflow’s owner)')
    .option('--name <name>', 'a name shown in listings')
    .option('--namespace <ns>', 'Tollgate’s namespace, where ApiKeys are believed', 'tollgate')
    .action((raw: unknown) => {
      const parsed = flagsSchema.safeParse(raw);
      if (!parsed.success) {
        process.stderr.write(
          `tollgate key manifest: ${parsed.error.issues[0]?.message ?? 'invalid flags'}\n`,
        );
        process.exit(2);
      }
      const { module, role, owner, name, namespace } = parsed.data;
      const key = generateKey(module);
      const spec = apiKeySpecSchema.parse({
        hash: hashKey(key),
        start: keyStart(key),
        module,
        roles: role,
        owner,
        ...(name === undefined ? {} : { name }),
      });
      const made = newApiKey(newKeyId(), spec);
      process.stdout.write(stringify({ ...made, metadata: { ...made.metadata, namespace } }));
      process.stderr.write(`${key}\n`);
    });
}
