// The nginx configuration shipped for auth_request answers every status Tollgate can refuse
// with as that status: a code added to common/errors.ts with a new status fails here until the
// example names it too.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ERROR_STATUS } from '../../../common/errors.js';
import { repoRoot } from '../../harness/paths.js';

const conf = readFileSync(
  join(repoRoot, 'examples', 'forward-auth', 'nginx', 'tollgate-server.conf'),
  'utf8',
);

describe('examples/forward-auth/nginx', () => {
  const statuses = [...new Set(Object.values(ERROR_STATUS))].filter((s) => s !== 403).sort();

  it.each(statuses)('answers a refusal of status %i with that status and Tollgate body', (status) => {
    expect(conf).toContain(`if ($tollgate_status = ${status}) { return ${status} $tollgate_error; }`);
  });

  it('answers what it does not know as a 403, never a 2xx', () => {
    expect(conf).toMatch(/return 403 \$tollgate_error;\s*}\s*$/);
    expect(conf).not.toMatch(/return 2\d\d/);
  });
});
