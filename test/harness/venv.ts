// The project venv made by `install.sh venv` (MLServer, scikit-learn), linked as <repo>/.venv.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { venvDir } from './paths.js';

export interface VenvInfo {
  python: string; // .venv/bin/python
  mlserver: string; // .venv/bin/mlserver
}

export function venvPaths(): VenvInfo {
  const python = join(venvDir, 'bin', 'python');
  if (!existsSync(python)) {
    throw new Error(
      `no Python venv at ${venvDir}: run \`bash test/harness/install.sh venv\` (make deps does it)`,
    );
  }
  return { python, mlserver: join(venvDir, 'bin', 'mlserver') };
}
