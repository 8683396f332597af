import path from 'node:path';
import type { Command } from 'commander';
import { ZodError } from 'zod';
import { isTollgateError } from '../../common/errors.js';
import { ManifestDir } from '../../common/resources/manifest-dir.js';
import {
  SERVICES_PLURAL,
  WorkflowServiceManifests,
  workflowServiceManifestSchema,
} from '../../common/resources/workflow-service.js';
import { WORKFLOW_PLURAL, workflowSchema } from '../../common/resources/workflow.js';
import { defaultStateDir, STATE_DIR_HELP } from '../state-dir.js';

interface StateFlag {
  stateDir: string;
}

/**
 * `tollgate route add|remove`: a workflow service for a gateway without a cluster. It writes a
 * Service manifest into the state directory, as `kubectl apply` of a labelled Service does on a
 * cluster; the operator of `tollgate dev` on that directory turns it into the route. The manifest
 * is the source of truth: Redis only ever holds what the operator derived from it.
 */
export function register(program: Command): void {
  const route = program
    .command('route')
    .description('Workflow services of standalone mode (Service manifests in the state directory)');
  const stateOption = ['--state-dir <dir>', STATE_DIR_HELP, defaultStateDir()] as const;

  route
    .command('add')
    .description('Route /events/bda/<workflow>/<service>/... to a service URL, owned by a user')
    .requiredOption('--workflow <id>', 'the workflow id (a bda key’s role)')
    .requiredOption('--service <id>', 'the service id inside the workflow')
    .requiredOption('--url <url>', 'base URL of the service, e.g. http://127.0.0.1:9000')
    .requiredOption('--owner <subject>', 'the user who owns the workflow (their token subject)')
    .option('--sidecar', 'the URL is the service’s `tollgate sidecar`: calls carry a signed grant for it')
    .option(...stateOption)
    .action(
      (
        flags: StateFlag & {
          workflow: string;
          service: string;
          url: string;
          owner: string;
          sidecar?: boolean;
        },
      ) =>
        withManifests(flags, async (services, dir) => {
          const name = await services.add({
            workflow: flags.workflow,
            service: flags.service,
            url: flags.url,
            owner: flags.owner,
            ...(flags.sidecar === true ? { sidecar: true } : {}),
          });
          process.stdout.write(
            `routed /events/bda/${flags.workflow}/${flags.service}/ to ${flags.url} (owner ${flags.owner}): ` +
              `${path.join(dir, SERVICES_PLURAL, name)}.yaml\n`,
          );
        }),
    );

  route
    .command('remove')
    .description('Remove a workflow service')
    .requiredOption('--workflow <id>', 'the workflow id')
    .requiredOption('--service <id>', 'the service id')
    .option(...stateOption)
    .action((flags: StateFlag & { workflow: string; service: string }) =>
      withManifests(flags, async (services) => {
        if (!(await services.remove(flags.workflow, flags.service))) {
          throw new Error(`no route for workflow ${flags.workflow}, service ${flags.service}`);
        }
        process.stdout.write(`removed /events/bda/${flags.workflow}/${flags.service}/\n`);
      }),
    );
}

async function withManifests(
  flags: StateFlag,
  fn: (services: WorkflowServiceManifests, dir: string) => Promise<void>,
): Promise<void> {
  const dir = path.resolve(flags.stateDir);
  const manifests = new ManifestDir(dir, (file, err) =>
    process.stderr.write(`tollgate route: ignoring ${file}: ${(err as Error).message}\n`),
  );
  try {
    await fn(
      new WorkflowServiceManifests(
        manifests.collection(SERVICES_PLURAL, workflowServiceManifestSchema),
        manifests.collection(WORKFLOW_PLURAL, workflowSchema),
      ),
      dir,
    );
  } catch (e) {
    if (e instanceof ZodError)
      return fail(`${e.issues[0]?.path.join('.') ?? ''}: ${e.issues[0]?.message ?? 'invalid'}`);
    return fail(isTollgateError(e) || e instanceof Error ? e.message : String(e));
  }
}

function fail(message: string): void {
  process.stderr.write(`tollgate route: ${message}\n`);
  process.exitCode = 1;
}
