import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { stringify } from 'yaml';
import { importedKeyId, importedKeySchema, importedKeySpec } from '../../common/apikey/imported-key.js';
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
  const key = program.command('key').description('Keys kept in Git');
  registerImport(key);
  key
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

/** The first problem of a row, as `line N: field: message`. */
function rowProblem(line: number, issues: readonly z.core.$ZodIssue[]): string {
  const issue = issues[0];
  const field = issue === undefined || issue.path.length === 0 ? '' : `${issue.path.join('.')}: `;
  return `line ${line}: ${field}${issue?.message ?? 'not a key'}`;
}

/**
 * `tollgate key import`: keys brought along from another gateway, from a file of one JSON object a
 * line (the fields of POST /api/v1/admin/apikeys/import), as ApiKey manifests on stdout for
 * `kubectl apply` (or Git). Every line is checked before anything is written; nothing in the file
 * or the manifests can call (hashes only).
 */
function registerImport(key: Command): void {
  key
    .command('import')
    .description('ApiKey manifests (hashes only) for keys made by another gateway, from a JSON Lines file')
    .requiredOption('--file <path>', 'one key a line: {"hash", "start", "module", "roles", "owner", ...}')
    .option('--namespace <ns>', 'Tollgate’s namespace, where ApiKeys are believed', 'tollgate')
    .action((opts: { file: string; namespace: string }) => {
      const fail = (message: string): never => {
        process.stderr.write(`tollgate key import: ${message}\n`);
        process.exit(2);
      };
      let text = '';
      try {
        text = readFileSync(opts.file, 'utf8');
      } catch (err) {
        fail(`cannot read ${opts.file}: ${(err as Error).message}`);
      }
      const docs: string[] = [];
      const seen = new Map<string, number>();
      text.split('\n').forEach((raw, i) => {
        const line = i + 1;
        if (raw.trim() === '') return;
        let value: unknown;
        try {
          value = JSON.parse(raw);
        } catch {
          fail(`line ${line}: not JSON; write one key as a JSON object a line`);
        }
        const row = importedKeySchema.safeParse(value);
        if (!row.success) return fail(rowProblem(line, row.error.issues));
        const twice = seen.get(row.data.hash);
        if (twice !== undefined) fail(`line ${line}: the same hash as line ${twice}; list each key once`);
        seen.set(row.data.hash, line);
        const spec = apiKeySpecSchema.safeParse(importedKeySpec(row.data));
        if (!spec.success) return fail(rowProblem(line, spec.error.issues));
        const made = newApiKey(importedKeyId(row.data.hash), spec.data);
        docs.push(stringify({ ...made, metadata: { ...made.metadata, namespace: opts.namespace } }));
      });
      if (docs.length === 0) fail(`${opts.file} holds no keys`);
      process.stdout.write(docs.join('---\n'));
    });
}
