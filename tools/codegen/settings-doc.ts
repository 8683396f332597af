import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, type Option } from 'commander';
import ts from 'typescript';
import { loadGatewayConfig } from '../../gateway/config.js';
import { GATEWAY_ENV, OIDC_ENV } from '../../gateway/config/sources.js';

/**
 * `tsx tools/codegen/settings-doc.ts [--check]`: writes docs/settings.md, every setting of every
 * program, from the declarations the programs read: the gateway's schema (gateway/config.ts and
 * gateway/config/: each
 * field, its comment, its environment name, its default) and each command's flags (cli/commands/:
 * its description, its default). With --check it writes nothing and fails when the page is stale
 * (a unit test runs the same comparison), so a setting cannot be added without its line.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const SETTINGS_DOC = path.join(root, 'docs/settings.md');

/** The files that declare the gateway's settings: its schema, and the groups it is made of. */
const SCHEMA_FILES = ['gateway/config.ts', 'gateway/config/webhook-settings.ts'];

/** The JSDoc of each property of the object literals in the schema's files, by property name. */
async function fieldComments(): Promise<Map<string, string>> {
  const comments = new Map<string, string>();
  for (const name of SCHEMA_FILES) {
    const file = path.join(root, name);
    const source = ts.createSourceFile(file, await readFile(file, 'utf8'), ts.ScriptTarget.Latest, true);
    visitComments(source, comments);
  }
  return comments;
}

function visitComments(source: ts.SourceFile, comments: Map<string, string>): void {
  const visit = (node: ts.Node): void => {
    if (ts.isPropertyAssignment(node) && (ts.isIdentifier(node.name) || ts.isStringLiteral(node.name))) {
      const doc = ts
        .getJSDocCommentsAndTags(node)
        .map((d) => (typeof d.comment === 'string' ? d.comment : ''))
        .join(' ');
      if (doc !== '' && !comments.has(node.name.text)) comments.set(node.name.text, oneLine(doc));
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}

const oneLine = (text: string): string => text.replace(/\s+/g, ' ').replace(/\|/g, '\\|').trim();

function shown(value: unknown): string {
  if (value === undefined) return 'unset';
  if (typeof value === 'string') return value === '' ? '""' : `\`${value}\``;
  if (Array.isArray(value) && value.length === 0) return 'none';
  if (typeof value === 'object' && value !== null && Object.keys(value).length === 0) return 'none';
  return `\`${JSON.stringify(value)}\``;
}

async function gatewaySection(): Promise<string[]> {
  const comments = await fieldComments();
  // The defaults as the gateway computes them with nothing set.
  const defaults = loadGatewayConfig({ env: {} }) as unknown as Record<string, unknown>;
  const envOf = new Map<string, string[]>();
  for (const [name, field] of GATEWAY_ENV) envOf.set(field, [...(envOf.get(field) ?? []), name]);
  // Read from OpenTelemetry's own variables (and Tollgate's), field by field: its comment names each.
  envOf.set('tracing', ['OTEL_*', 'TOLLGATE_TRACES_*']);
  const fields = [...new Set([...Object.keys(defaults), ...GATEWAY_ENV.map(([, f]) => f)])].sort();
  const rows = fields.map((field) => {
    const env = (envOf.get(field) ?? []).map((n) => `\`${n}\``).join(', ') || '(file only)';
    return `| \`${field}\` | ${env} | ${shown(defaults[field])} | ${comments.get(field) ?? ''} |`;
  });
  const oidc = OIDC_ENV.map(
    ([name, field]) => `| \`oidc.${field}\` | \`${name}\` | unset | ${comments.get(field) ?? ''} |`,
  );
  return [
    '## The gateway (`tollgate gateway`, and the settings `tollgate sidecar` and `tollgate dev` pass it)',
    '',
    'Read from a YAML or JSON file (`TOLLGATE_CONFIG` or `--config`), then the environment, then the',
    "command's flags; each layer overrides the one before. A list is an array in the file, or",
    '`a,b,c` in the environment; `upstreams` is `name=url,name=url` (`TOLLGATE_UPSTREAMS`).',
    '',
    '| setting | environment | default | what it does |',
    '|---|---|---|---|',
    ...rows,
    '| `upstreams` | `TOLLGATE_UPSTREAMS` | none | Platform resource → upstream base URL (`name=url,...`). |',
    ...oidc,
    '',
  ];
}

const COMMANDS: Record<string, () => Promise<{ register: (p: Command) => void }>> = {
  operator: () => import('../../cli/commands/operator.js'),
  gateway: () => import('../../cli/commands/gateway.js'),
  sidecar: () => import('../../cli/commands/sidecar.js'),
  dev: () => import('../../cli/commands/dev.js'),
};

/**
 * Each command's flags, with the defaults it has in an empty environment (several take their
 * default from a variable, which the description then names).
 */
async function commandSections(): Promise<string[]> {
  const out: string[] = [];
  const saved = process.env;
  try {
    for (const [name, load] of Object.entries(COMMANDS)) {
      const { register } = await load();
      const program = new Command();
      process.env = {};
      register(program);
      process.env = saved;
      const command = program.commands.find((c) => c.name() === name);
      if (command === undefined) continue;
      out.push(
        `## \`tollgate ${name}\``,
        '',
        command.description(),
        '',
        '| flag | environment | default | what it does |',
        '|---|---|---|---|',
      );
      for (const o of command.options as Option[]) {
        const env = o.envVar === undefined ? '' : `\`${o.envVar}\``;
        const value = o.negate ? '' : shown(o.defaultValue);
        out.push(`| \`${o.flags}\` | ${env} | ${value} | ${oneLine(o.description)} |`);
      }
      out.push('');
    }
  } finally {
    process.env = saved;
  }
  return out;
}

export async function settingsDoc(): Promise<string> {
  return [
    '# Settings',
    '',
    "<!-- Generated from the programs' own declarations by tools/codegen/settings-doc.ts; do not edit:",
    '     change a setting where it is declared and run `npm run codegen`. -->',
    '',
    'Every setting of every program, its environment name, its flag and its default, as the programs',
    'declare them (a test fails when this page is stale). The chart sets them from its values',
    '(`helm/tollgate/values.yaml`).',
    '',
    ...(await gatewaySection()),
    ...(await commandSections()),
  ].join('\n');
}

async function main(): Promise<void> {
  const text = await settingsDoc();
  if (process.argv.includes('--check')) {
    const current = await readFile(SETTINGS_DOC, 'utf8').catch(() => '');
    if (current !== text) {
      process.stderr.write(`${SETTINGS_DOC} is stale: run npm run codegen\n`);
      process.exit(1);
    }
    return;
  }
  await writeFile(SETTINGS_DOC, text);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
