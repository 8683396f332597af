/**
 * The manual's runnable examples (the README, then the docs/ pages it lists under "Read on", in
 * that order): fenced blocks whose info string is `sh runnable`. Each logical
 * command (lines joined on a trailing `\`) may be followed by `# → <text>` lines: the command's
 * output must contain each text. Other comment lines are prose. The blocks run in order in one
 * bash session, as a reader pasting them into one terminal would, so a variable set in one
 * (TOKEN=...) is there for the next.
 */
export interface RunnableCommand {
  /** Where it is (`docs/keys.md:21`), for failures a reader can find. */
  where: string;
  command: string;
  expect: string[];
}

const FENCE = /^```(\S*)\s*(.*)$/;
const EXPECT = /^#\s*→\s?(.*)$/;

export function runnableCommands(markdown: string, file: string): RunnableCommand[] {
  const lines = markdown.split('\n');
  const out: RunnableCommand[] = [];
  let inBlock = false;
  let runnable = false;
  let pending: { line: number; parts: string[] } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i] as string;
    const fence = FENCE.exec(text);
    if (fence) {
      if (!inBlock) {
        inBlock = true;
        runnable =
          (fence[1] === 'sh' || fence[1] === 'bash') && fence[2]?.split(/\s+/).includes('runnable') === true;
      } else {
        inBlock = false;
      }
      continue;
    }
    if (!inBlock || !runnable) continue;
    if (pending !== undefined) {
      pending.parts.push(text);
      if (!text.endsWith('\\')) {
        out.push({ where: `${file}:${pending.line}`, command: pending.parts.join('\n'), expect: [] });
        pending = undefined;
      }
      continue;
    }
    const expectation = EXPECT.exec(text.trim());
    if (expectation) {
      const last = out[out.length - 1];
      if (last === undefined) throw new Error(`${file}:${i + 1}: an expectation before any command`);
      last.expect.push(expectation[1] as string);
      continue;
    }
    if (text.trim() === '' || text.trim().startsWith('#')) continue;
    if (text.endsWith('\\')) pending = { line: i + 1, parts: [text] };
    else out.push({ where: `${file}:${i + 1}`, command: text, expect: [] });
  }
  if (inBlock) throw new Error(`${file}: a fenced block is never closed`);
  return out;
}

/** The docs/ pages the README lists under "## Read on", in its order. */
export function readOnPages(readme: string): string[] {
  const start = readme.indexOf('\n## Read on\n');
  if (start < 0) throw new Error('README: no "## Read on" section');
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/\]\((docs\/[\w-]+\.md)\)/g)].map((m) => m[1] as string);
}

const marker = (i: number, what: string) => `@@tollgate-readme ${i} ${what}@@`;

/**
 * One bash script running every command in this shell (so assignments persist), each one's
 * output captured between markers with its exit status.
 */
export function walkthroughScript(commands: RunnableCommand[], prelude: string): string {
  const parts = [prelude, 'set -o pipefail'];
  commands.forEach((c, i) => {
    parts.push(`echo '${marker(i, 'begin')}'`);
    parts.push(`{\n${c.command}\n} 2>&1`);
    parts.push(`echo; echo "${marker(i, 'end')} $?"`);
  });
  return parts.join('\n') + '\n';
}

/** Each command's output and exit status, from the script's output. */
export function splitOutputs(
  stdout: string,
  count: number,
): Array<{ output: string; status: number } | undefined> {
  const results: Array<{ output: string; status: number } | undefined> = [];
  for (let i = 0; i < count; i++) {
    const begin = stdout.indexOf(marker(i, 'begin'));
    const endRe = new RegExp(`${marker(i, 'end').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} (\\d+)`);
    const end = endRe.exec(stdout);
    if (begin < 0 || end === null) {
      results.push(undefined);
      continue;
    }
    results.push({
      output: stdout.slice(begin + marker(i, 'begin').length, end.index).trim(),
      status: Number(end[1]),
    });
  }
  return results;
}
