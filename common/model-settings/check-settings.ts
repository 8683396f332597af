import path from 'node:path';
import { isModelName } from '../resources/model-name.js';
import { countValues, previewValue } from '../value-preview.js';
import {
  CONTENT_TYPES,
  DATATYPES,
  NUMERIC_DATATYPES,
  TASK_TYPES,
  type ContentType,
  type Datatype,
  type DeclaredSchema,
  type ModelSettings,
  type SettingsProblem,
  type TensorSpec,
} from './types.js';

export interface SettingsContext {
  /** The Model's name: the settings' `name` must equal it. */
  modelName?: string;
  /** Paths of the files beside the settings file (relative to its folder, '/'-separated). */
  files?: readonly string[];
}

export type SettingsCheck =
  | { ok: true; settings: ModelSettings; declared: DeclaredSchema }
  | { ok: false; problems: SettingsProblem[] };

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (values: readonly string[]) => values.join(', ');
// A folder's files, a frame's columns: there may be thousands, so a few are named, the rest counted.
const someOf = (values: readonly string[]) =>
  values.length <= 5 ? list(values) : `${list(values.slice(0, 5))} and ${values.length - 5} more`;
// The file is the Model's author's: a value in it is quoted short, however large or deep.
const show = (v: unknown) => previewValue(v);

/**
 * What one settings file may hold once parsed: the operator keeps each version's, and a file of
 * its largest size (1 MiB) made of empty objects parses to twenty times that. A model's settings
 * declare a few tensors and parameters; feature names for thousands of columns still fit.
 */
export const MAX_SETTINGS_VALUES = 20_000;

/** Parses the text of a model-settings.json and checks it; a JSON syntax error is a problem too. */
export function checkModelSettingsText(text: string, ctx: SettingsContext = {}): SettingsCheck {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    return { ok: false, problems: [{ path: '', message: `not valid JSON (${why}); fix the syntax` }] };
  }
  if (countValues(raw, MAX_SETTINGS_VALUES) > MAX_SETTINGS_VALUES) {
    const message = `holds more than ${MAX_SETTINGS_VALUES} values (objects, arrays, strings, numbers); a model's settings declare its tensors and parameters: remove what MLServer does not need`;
    return { ok: false, problems: [{ path: '', message }] };
  }
  return checkModelSettings(raw, ctx);
}

/**
 * Checks a model-settings.json against the serving spec's rules and reports every problem at once,
 * each with the field at fault and what to change, so a data scientist fixes the file in one pass
 * instead of watching a pod crash-loop.
 */
export function checkModelSettings(raw: unknown, ctx: SettingsContext = {}): SettingsCheck {
  const problems: SettingsProblem[] = [];
  const add = (p: string, message: string) => problems.push({ path: p, message });
  if (!isObject(raw)) {
    add('', 'the file must hold a JSON object with name, implementation, parameters, inputs and outputs');
    return { ok: false, problems };
  }

  checkName(raw.name, ctx.modelName, add);
  checkImplementation(raw.implementation, add);

  const params = raw.parameters;
  let contentType: ContentType | undefined;
  let featureNames: string[] | undefined;
  if (!isObject(params)) {
    add(
      'parameters',
      'add a "parameters" object with "uri" (e.g. "./model.joblib") and "content_type" (np, pd or str)',
    );
  } else {
    checkUri(params.uri, ctx.files, add);
    contentType = checkContentType(params.content_type, add);
    if (params.task_type !== undefined && !(TASK_TYPES as readonly unknown[]).includes(params.task_type)) {
      add(
        'parameters.task_type',
        `${show(params.task_type)} is not a task type; use one of ${list(TASK_TYPES)} or remove it`,
      );
    }
    featureNames = checkFeatureNames(params.feature_names, add);
  }

  const inputs = checkTensors(raw.inputs, 'inputs', true, add);
  const outputs = checkTensors(raw.outputs, 'outputs', false, add);
  if (outputs) outputs.forEach((t, i) => checkOutputShape(t, `outputs[${i}].shape`, add));
  // The content type's rules are stricter than the generic batch rule and say more; use one or the other.
  if (inputs && contentType) checkContentTypeInputs(contentType, inputs, featureNames, add);
  else if (inputs) inputs.forEach((t, i) => checkInputShape(t, `inputs[${i}].shape`, add));

  if (problems.length > 0) return { ok: false, problems };
  const settings = raw as ModelSettings;
  const declared: DeclaredSchema = { inputs: inputs ?? [], outputs: outputs ?? [] };
  if (contentType) declared.contentType = contentType;
  return { ok: true, settings, declared };
}

type Add = (path: string, message: string) => void;

function checkName(name: unknown, modelName: string | undefined, add: Add) {
  if (typeof name !== 'string' || name === '') {
    add('name', `add "name": ${show(modelName ?? 'model-<id>')} (the Model's name)`);
  } else if (modelName !== undefined && name !== modelName) {
    add('name', `is ${show(name)} but the Model is named ${show(modelName)}; set "name": ${show(modelName)}`);
  } else if (!isModelName(name)) {
    add(
      'name',
      `${show(name)} is not of the form model-<id> (lowercase letters, digits, '-', at most 63 characters)`,
    );
  }
}

function checkImplementation(impl: unknown, add: Add) {
  if (typeof impl !== 'string' || impl === '') {
    add('implementation', 'add "implementation": "mlserver_sklearn.SKLearnModel" for a scikit-learn model');
  } else if (!/^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$/.test(impl)) {
    add('implementation', `${show(impl)} is not a Python class path like "mlserver_sklearn.SKLearnModel"`);
  }
}

function checkUri(uri: unknown, files: readonly string[] | undefined, add: Add) {
  if (typeof uri !== 'string' || uri === '') {
    add('parameters.uri', 'add "uri": the model file beside the settings file, e.g. "./model.joblib"');
    return;
  }
  if (/^[a-z][a-z0-9+.-]*:/i.test(uri) || path.posix.isAbsolute(uri)) {
    add('parameters.uri', `${show(uri)} must be a path relative to the settings file, e.g. "./model.joblib"`);
    return;
  }
  const rel = path.posix.normalize(uri);
  if (rel === '..' || rel.startsWith('../')) {
    add(
      'parameters.uri',
      `${show(uri)} leaves the model folder; put the model file beside the settings file`,
    );
    return;
  }
  if (files && !files.includes(rel)) {
    const candidates = files.filter((f) => /\.(joblib|pkl|pickle)$/.test(f));
    const hint =
      candidates.length > 0
        ? `; the folder has ${someOf(candidates.map((f) => `./${f}`))}`
        : '; upload the model file to the same folder as the settings file';
    add('parameters.uri', `${show(uri)} is not in the model folder${hint}`);
  }
}

function checkContentType(ct: unknown, add: Add): ContentType | undefined {
  if ((CONTENT_TYPES as readonly unknown[]).includes(ct)) return ct as ContentType;
  const what = ct === undefined ? 'is missing' : `${show(ct)} is not supported`;
  add(
    'parameters.content_type',
    `${what}; use "np" (one numeric tensor), "pd" (one column per input, listed in feature_names) or "str" (one list of strings)`,
  );
  return undefined;
}

function checkFeatureNames(names: unknown, add: Add): string[] | undefined {
  if (names === undefined) return undefined;
  if (!Array.isArray(names) || names.length === 0 || !names.every((n) => typeof n === 'string' && n !== '')) {
    add('parameters.feature_names', 'must be a non-empty array of column names (strings)');
    return undefined;
  }
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  if (dup !== undefined) add('parameters.feature_names', `${show(dup)} appears twice; list each column once`);
  return names as string[];
}

function checkTensors(
  value: unknown,
  field: 'inputs' | 'outputs',
  required: boolean,
  add: Add,
): TensorSpec[] | undefined {
  if (value === undefined && !required) return [];
  if (!Array.isArray(value) || (required && value.length === 0)) {
    add(
      field,
      `add "${field}": an array of {"name", "datatype", "shape"}${required ? ' with at least one item' : ''}`,
    );
    return undefined;
  }
  const good: TensorSpec[] = [];
  const seen = new Set<string>();
  let ok = true;
  value.forEach((t: unknown, i) => {
    const at = `${field}[${i}]`;
    if (!isObject(t)) {
      add(at, 'must be an object {"name", "datatype", "shape"}');
      ok = false;
      return;
    }
    if (typeof t.name !== 'string' || t.name === '') {
      add(`${at}.name`, 'add a non-empty "name"');
      ok = false;
    } else if (seen.has(t.name)) {
      add(`${at}.name`, `${show(t.name)} is used twice; give each ${field.slice(0, -1)} its own name`);
      ok = false;
    } else seen.add(t.name);
    if (!(DATATYPES as readonly unknown[]).includes(t.datatype)) {
      add(`${at}.datatype`, `${show(t.datatype)} is not a V2 datatype; use one of ${list(DATATYPES)}`);
      ok = false;
    }
    if (
      !Array.isArray(t.shape) ||
      t.shape.length === 0 ||
      !t.shape.every((d) => Number.isInteger(d) && (d === -1 || d > 0))
    ) {
      add(
        `${at}.shape`,
        `${show(t.shape)} must be a non-empty array of positive integers, with -1 for the batch dimension`,
      );
      ok = false;
    }
    if (ok)
      good.push({ name: t.name as string, datatype: t.datatype as Datatype, shape: t.shape as number[] });
  });
  return ok ? good : undefined;
}

function checkInputShape(t: TensorSpec, at: string, add: Add) {
  if (t.shape[0] !== -1)
    add(
      at,
      `${show(t.shape)}: the first dimension is the batch; make it -1, e.g. [-1, ${t.shape.join(', ')}]`,
    );
  else if (t.shape.indexOf(-1, 1) !== -1)
    add(at, `${show(t.shape)}: only the first (batch) dimension may be -1; give the others their size`);
}

function checkOutputShape(t: TensorSpec, at: string, add: Add) {
  const [batch, k, ...rest] = t.shape;
  if (batch !== -1 || k === undefined || k < 1 || rest.length > 0) {
    add(
      at,
      `${show(t.shape)}: an output shape is [-1, 1] for one value per row or [-1, K] for K values (e.g. class probabilities)`,
    );
  }
}

function checkContentTypeInputs(
  ct: ContentType,
  inputs: TensorSpec[],
  featureNames: string[] | undefined,
  add: Add,
) {
  if (ct === 'np') {
    if (inputs.length !== 1) {
      add(
        'inputs',
        `content_type "np" takes exactly one input (all features in one tensor), found ${inputs.length}; merge them or use "pd"`,
      );
      return;
    }
    const [t] = inputs as [TensorSpec];
    if (!NUMERIC_DATATYPES.includes(t.datatype)) {
      add(
        'inputs[0].datatype',
        `${show(t.datatype)}: content_type "np" needs a numeric datatype (${list(NUMERIC_DATATYPES)}); use "pd" or "str" for strings`,
      );
    }
    if (t.shape.length !== 2 || t.shape[0] !== -1 || (t.shape[1] ?? 0) < 1) {
      add(
        'inputs[0].shape',
        `${show(t.shape)}: content_type "np" needs [-1, N] where N is the number of features`,
      );
    }
  } else if (ct === 'pd') {
    if (!featureNames) {
      add(
        'parameters.feature_names',
        `content_type "pd" needs "feature_names": the column names, e.g. ${show(inputs.map((t) => t.name))}`,
      );
    }
    inputs.forEach((t, i) => {
      if (t.datatype !== 'BYTES')
        add(
          `inputs[${i}].datatype`,
          `${show(t.datatype)}: with content_type "pd" each column input is "BYTES"`,
        );
      if (t.shape.length !== 1 || t.shape[0] !== -1)
        add(
          `inputs[${i}].shape`,
          `${show(t.shape)}: with content_type "pd" each column input has shape [-1]`,
        );
      if (featureNames && !featureNames.includes(t.name)) {
        add(
          `inputs[${i}].name`,
          `${show(t.name)} is not in parameters.feature_names; rename the input or add the column`,
        );
      }
    });
    if (featureNames) {
      const names = new Set(inputs.map((t) => t.name));
      const missing = featureNames.filter((n) => !names.has(n));
      if (missing.length > 0)
        add(
          'inputs',
          `no input for the column(s) ${someOf(missing.map(show))}; add one BYTES [-1] input per column`,
        );
    }
  } else {
    if (inputs.length !== 1) {
      add(
        'inputs',
        `content_type "str" takes exactly one input (the list of strings), found ${inputs.length}`,
      );
      return;
    }
    const [t] = inputs as [TensorSpec];
    if (t.datatype !== 'BYTES')
      add('inputs[0].datatype', `${show(t.datatype)}: content_type "str" needs "BYTES"`);
    if (t.shape.length !== 1 || t.shape[0] !== -1)
      add('inputs[0].shape', `${show(t.shape)}: content_type "str" needs shape [-1]`);
  }
}
