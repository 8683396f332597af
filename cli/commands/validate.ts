import type { Command } from 'commander';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { checkModelFolder } from '../../common/model-settings/check-folder.js';
import { SETTINGS_FILE } from '../../common/model-settings/types.js';
import { FileStore } from '../../operator/storage/file-store.js';

/**
 * `tollgate validate <dir-or-file>`: the same check the operator runs before deploying a Model, so
 * a data scientist finds every mistake before uploading.
 */
export function register(program: Command): void {
  program
    .command('validate')
    .description('check a model folder (or its model-settings.json) the way the operator will')
    .argument('<path>', 'a model folder, or a model-settings.json inside one')
    .option('--name <model-name>', "the Model's name (model-<id>); the settings' name must equal it")
    .action(async (target: string, opts: { name?: string }) => {
      const abs = path.resolve(target);
      let dir = abs;
      try {
        if ((await stat(abs)).isFile()) {
          if (path.basename(abs) !== SETTINGS_FILE)
            throw new Error(`${target} is not a folder or a ${SETTINGS_FILE}`);
          dir = path.dirname(abs);
        }
        const store = new FileStore(dir);
        const files = (await store.list()).map((o) => o.path);
        const result = await checkModelFolder({ files, read: (p) => store.readText(p) }, opts.name);
        if (result.ok) {
          const how = result.generated
            ? `MLflow model, served with ${result.settings.implementation}`
            : result.settings.implementation;
          const inputs = result.declared.inputs
            .map((t) => `${t.name} ${t.datatype} [${t.shape.join(', ')}]`)
            .join('; ');
          process.stdout.write(
            `ok: ${result.settings.name} (${how})${inputs ? `; inputs: ${inputs}` : ''}\n`,
          );
          return;
        }
        for (const p of result.problems)
          process.stderr.write(`${p.path === '' ? '' : `${p.path}: `}${p.message}\n`);
        process.stderr.write(
          `${result.problems.length} problem${result.problems.length === 1 ? '' : 's'} in ${dir}\n`,
        );
      } catch (e) {
        process.stderr.write(`tollgate validate: ${e instanceof Error ? e.message : String(e)}\n`);
      }
      process.exitCode = 1;
    });
}
