import { execFileSync } from 'node:child_process';
import { repoRoot } from '../../harness/paths.js';

const changed = (file: string): boolean =>
  execFileSync('git', ['status', '--porcelain', '--', file], { cwd: repoRoot, encoding: 'utf8' }) !== '';

/**
 * Installing the dependencies (`make deps-node`, which `make demo` and `make test` run first)
 * leaves the lock exactly as committed: `npm ci` installs from it and never rewrites it. Checked
 * after the install, in the clone; a developer who is changing package.json is changing the lock.
 */
describe('the package lock', () => {
  it('is as committed after the dependencies were installed', () => {
    if (changed('package.json')) return;
    expect(changed('package-lock.json')).toBe(false);
  });
});
