import { TollgateError } from '../../../common/errors.js';
import { normalisePath } from '../../../gateway/routing/normalise.js';

function refusal(url: string): { status: number; code: string } {
  try {
    normalisePath(url);
  } catch (err) {
    if (err instanceof TollgateError) return { status: err.status, code: err.code };
    throw err;
  }
  throw new Error(`${url} was accepted`);
}

describe('normalisePath', () => {
  it('splits, decodes and keeps the raw form and the query', () => {
    expect(normalisePath('/events/bda/wf/svc/a%20b/c/?x=1&y=%2F')).toEqual({
      segments: ['events', 'bda', 'wf', 'svc', 'a b', 'c'],
      raw: ['events', 'bda', 'wf', 'svc', 'a%20b', 'c'],
      trailingSlash: true,
      query: '?x=1&y=%2F',
    });
    expect(normalisePath('/')).toEqual({ segments: [], raw: [], trailingSlash: true, query: '' });
    expect(normalisePath('/healthz').segments).toEqual(['healthz']);
  });

  it.each([
    ['/events/bda/a/svc/../../b/svc/x', 'path_traversal'],
    ['/events/bda/a/svc/./x', 'path_traversal'],
    ['/events/bda/a/..', 'path_traversal'],
    ['/events/bda/a/svc/%2e%2e/%2E%2E/b/svc', 'path_traversal'],
    ['/events/bda/a/svc/.%2e/x', 'path_traversal'],
    ['/events/bda/a/svc/..;x/b', 'path_traversal'],
    ['/events/bda/a/svc%2f..%2f..%2fb/svc', 'encoded_separator'],
    ['/events/bda/a/svc/%5c..%5cb', 'encoded_separator'],
    ['/events/bda/a//b/svc', 'empty_path_segment'],
    ['//events/bda/b/svc', 'empty_path_segment'],
    ['/events/bda/a/svc\\..\\b', 'backslash_in_path'],
    ['/events/bda/a/svc/%c0%ae%c0%ae/b', 'invalid_path_encoding'],
    ['/events/bda/a/svc/%e0%80%ae', 'invalid_path_encoding'],
    ['/events/bda/a/svc/%zz', 'invalid_path_encoding'],
    ['/events/bda/a/svc/%00', 'invalid_path_encoding'],
    ['/events/bda/a/svc/%252e%252e/b', 'double_encoded_path'],
    ['/events/bda/a/svc/%252f', 'double_encoded_path'],
    ['http://evil/events/bda/b/svc', 'invalid_path'],
  ])('refuses %s with %s', (url, code) => {
    expect(refusal(url)).toEqual({ status: 400, code });
  });

  it('lets dots inside names through', () => {
    expect(normalisePath('/events/bda/wf.1/svc/file..txt/.hidden').segments).toEqual([
      'events',
      'bda',
      'wf.1',
      'svc',
      'file..txt',
      '.hidden',
    ]);
  });
});
