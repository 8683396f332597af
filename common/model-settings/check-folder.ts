import { checkModelSettingsText } from './check-settings.js';
import { settingsFromMlmodel } from './mlflow.js';
import {
  MLMODEL_FILE,
  SETTINGS_FILE,
  type DeclaredSchema,
  type ModelSettings,
  type SettingsProblem,
} from './types.js';

/** A model folder seen through whatever holds it: a local directory, S3, or file:// storage. */
export interface ModelFolder {
  /** Every file under the folder, relative to it, '/'-separated. */
  files: readonly string[];
  read(relativePath: string): Promise<string>;
}

export type FolderCheck =
  | {
      ok: true;
      settings: ModelSettings;
      /** True when the settings were written for the folder (MLflow) rather than read from it. */
      generated: boolean;
      declared: DeclaredSchema;
    }
  | { ok: false; problems: SettingsProblem[] };

/**
 * Decides how a folder is served: its model-settings.json (checked), or an MLflow `MLmodel` with
 * settings written for it (named `modelName`, which the operator always knows). Problems in the settings file carry paths prefixed with the file name.
 */
export async function checkModelFolder(folder: ModelFolder, modelName?: string): Promise<FolderCheck> {
  if (folder.files.includes(SETTINGS_FILE)) {
    const check = checkModelSettingsText(await folder.read(SETTINGS_FILE), {
      modelName,
      files: folder.files,
    });
    if (!check.ok)
      return {
        ok: false,
        problems: check.problems.map((p) => ({ ...p, path: prefixed(SETTINGS_FILE, p.path) })),
      };
    return { ok: true, settings: check.settings, generated: false, declared: check.declared };
  }
  if (folder.files.includes(MLMODEL_FILE)) {
    const check = settingsFromMlmodel(modelName ?? 'model-<id>', await folder.read(MLMODEL_FILE));
    return check.ok ? { ...check, generated: true } : check;
  }
  const found =
    folder.files.length === 0 ? 'the folder is empty' : `found ${folder.files.slice(0, 5).join(', ')}`;
  return {
    ok: false,
    problems: [
      {
        path: SETTINGS_FILE,
        message: `no ${SETTINGS_FILE} (or MLflow ${MLMODEL_FILE}) in the model folder (${found}); upload ${SETTINGS_FILE} beside the model file`,
      },
    ],
  };
}

const prefixed = (file: string, p: string) => (p === '' ? file : `${file}:${p}`);

/** One line per problem, for condition messages, events and the CLI. */
/** Problems listed in one message: the rest are counted (a status condition has a size limit). */
const LISTED_PROBLEMS = 20;

export function formatProblems(problems: readonly SettingsProblem[]): string {
  const listed = problems
    .slice(0, LISTED_PROBLEMS)
    .map((p) => (p.path === '' ? p.message : `${p.path}: ${p.message}`))
    .join('; ');
  const more = problems.length - LISTED_PROBLEMS;
  return more > 0 ? `${listed}; and ${more} more problem${more === 1 ? '' : 's'}` : listed;
}
