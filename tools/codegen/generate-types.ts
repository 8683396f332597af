import { readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { zodFor, type JsonSchema } from './crd-to-zod.js';

/**
 * `tsx tools/codegen/generate-types.ts [--check]`: writes common/resources/generated/<plural>.ts
 * from crds/*.yaml (zod schemas for spec and status, the resource, and their inferred types).
 * With --check it writes nothing and fails if a generated file is out of date (a unit test runs it).
 */
interface Crd {
  spec: {
    group: string;
    names: { kind: string; plural: string };
    versions: Array<{ name: string; storage?: boolean; schema: { openAPIV3Schema: JsonSchema } }>;
  };
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const CRD_DIR = path.join(root, 'crds');
export const OUT_DIR = path.join(root, 'common/resources/generated');

const lower = (s: string) => s[0]!.toLowerCase() + s.slice(1);

export function generate(crd: Crd, source: string): string {
  const { group, names } = crd.spec;
  const version = crd.spec.versions.find((v) => v.storage) ?? crd.spec.versions[0]!;
  const top = version.schema.openAPIV3Schema;
  const kind = names.kind;
  const v = lower(kind);
  const part = (name: 'spec' | 'status') => top.properties?.[name];
  const out = [
    `// Generated from ${source} by tools/codegen/generate-types.ts. Do not edit: change the CRD`,
    '// and run `npm run codegen`.',
    "import { z } from 'zod';",
    "import { objectMetaSchema } from '../object-meta.js';",
    '',
    `export const ${v.toUpperCase().replace(/[^A-Z]/g, '_')}_API_VERSION = ${JSON.stringify(`${group}/${version.name}`)};`,
    `export const ${v.toUpperCase().replace(/[^A-Z]/g, '_')}_PLURAL = ${JSON.stringify(names.plural)};`,
    '',
  ];
  for (const name of ['spec', 'status'] as const) {
    const schema = part(name);
    if (!schema) continue;
    const id = `${v}${name[0]!.toUpperCase()}${name.slice(1)}`;
    if (schema.description) out.push(`/** ${schema.description} */`);
    out.push(
      `export const ${id}Schema = ${zodFor(schema)};`,
      `export type ${kind}${name === 'spec' ? 'Spec' : 'Status'} = z.infer<typeof ${id}Schema>;`,
      '',
    );
  }
  const required = new Set(top.required ?? []);
  if (top.description) out.push(`/** ${top.description} */`);
  out.push(
    `export const ${v}Schema = z.object({`,
    `  apiVersion: z.literal(${JSON.stringify(`${group}/${version.name}`)}),`,
    `  kind: z.literal(${JSON.stringify(kind)}),`,
    '  metadata: objectMetaSchema,',
    ...(['spec', 'status'] as const)
      .filter((n) => part(n))
      .map(
        (n) =>
          `  ${n}: ${v}${n[0]!.toUpperCase()}${n.slice(1)}Schema${required.has(n) ? '' : '.optional()'},`,
      ),
    '});',
    `export type ${kind} = z.infer<typeof ${v}Schema>;`,
    '',
  );
  const text = out.join('\n');
  // A CRD pattern may name control characters (one that refuses them in a storage URI).
  return /\\\\x[01]/.test(text)
    ? text.replace('import { z }', '/* eslint-disable no-control-regex */\nimport { z }')
    : text;
}

export async function generateAll(): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const file of (await readdir(CRD_DIR)).filter((f) => f.endsWith('.yaml')).sort()) {
    const crd = parse(await readFile(path.join(CRD_DIR, file), 'utf8')) as Crd;
    const { format } = await import('prettier');
    const text = await format(generate(crd, `crds/${file}`), {
      parser: 'typescript',
      singleQuote: true,
      printWidth: 110,
      trailingComma: 'all',
    });
    files.set(path.join(OUT_DIR, `${crd.spec.names.plural}.ts`), text);
  }
  return files;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes('--check');
  let stale = 0;
  for (const [file, text] of await generateAll()) {
    const current = await readFile(file, 'utf8').catch(() => '');
    if (current === text) continue;
    if (check) {
      stale++;
      process.stderr.write(`${path.relative(root, file)} is out of date; run npm run codegen\n`);
    } else {
      await writeFile(file, text);
      process.stdout.write(`wrote ${path.relative(root, file)}\n`);
    }
  }
  process.exitCode = stale > 0 ? 1 : 0;
}
