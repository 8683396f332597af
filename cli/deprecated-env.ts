/**
 * A setting's old environment name, still read (with a warning) so a deployment that sets it keeps
 * working; the option's own `.env()` names the current one, which wins when both are set. One name
 * per setting in every program: docs/settings.md lists the current ones.
 */
export function deprecatedEnv(
  old: string,
  current: string,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const value = env[old];
  if (value === undefined || value === '') return undefined;
  if (env[current] === undefined)
    process.stderr.write(`tollgate: ${old} is deprecated and will be removed; set ${current} instead\n`);
  return value;
}
