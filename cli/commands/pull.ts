import type { Command } from 'commander';
import { isTollgateError } from '../../common/errors.js';
import { DEFAULT_CONCURRENCY, formatSummary, pullFolder } from '../../operator/puller/pull.js';
import { openStore } from '../../operator/storage/open-store.js';

/** `tollgate pull <storageUri> <dir>`: the container beside every model's runtime (operator/serving/model-workload.ts). */
export function register(program: Command): void {
  program
    .command('pull')
    .description('download a model folder (s3://bucket/prefix or file:///path) into a directory')
    .argument(
      '<storageUri>',
      's3://<bucket>/<folder> (AWS_* variables for credentials and endpoint) or file:///<path>',
    )
    .argument('<dir>', 'destination directory (created if missing)')
    .option(
      '-c, --concurrency <n>',
      'parallel transfers',
      (v) => positiveInt(v, '--concurrency'),
      DEFAULT_CONCURRENCY,
    )
    .option(
      '--part-size-mib <n>',
      'files larger than this are fetched in parallel ranges of this size',
      (v) => positiveInt(v, '--part-size-mib'),
      16,
    )
    .option('--settings <json>', 'write this model-settings.json after the pull (MLflow folders)')
    .action(
      async (
        uri: string,
        dir: string,
        opts: { concurrency: number; partSizeMib: number; settings?: string },
      ) => {
        try {
          const summary = await pullFolder(openStore(uri, process.env), dir, {
            concurrency: opts.concurrency,
            partSize: opts.partSizeMib * 1024 * 1024,
            progress: (line) => process.stdout.write(`${line}\n`),
            ...(opts.settings !== undefined ? { settings: opts.settings } : {}),
          });
          process.stdout.write(`${formatSummary(summary)}\n`);
        } catch (e) {
          const msg = isTollgateError(e)
            ? `${e.message} [${e.code}]`
            : e instanceof Error
              ? e.message
              : String(e);
          process.stderr.write(`tollgate pull: ${msg}\n`);
          process.exitCode = 1;
        }
      },
    );
}

function positiveInt(v: string, flag: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} must be a positive integer, got "${v}"`);
  return n;
}
