import { TollgateError } from '../../../common/errors.js';
import { matchV2 } from '../../../gateway/v2/paths.js';

/** What a path names: the endpoint's name, with the model and version it carries. */
const match = (path: string) => {
  const { spec, ...found } = matchV2(path.split('/').slice(1));
  return { endpoint: spec.name, ...found };
};

function refused(path: string): [number, string, string] {
  try {
    match(path);
  } catch (err) {
    if (err instanceof TollgateError) return [err.status, err.code, err.message];
    throw err;
  }
  throw new Error(`${path} matched`);
}

describe('matchV2', () => {
  it('names each endpoint, with the model and version its path carries', () => {
    expect(match('/v2')).toEqual({ endpoint: 'server' });
    expect(match('/v2/health/live')).toEqual({ endpoint: 'health-live' });
    expect(match('/v2/health/ready')).toEqual({ endpoint: 'health-ready' });
    expect(match('/v2/models')).toEqual({ endpoint: 'models' });
    expect(match('/v2/repository/index')).toEqual({ endpoint: 'repository-index' });
    expect(match('/v2/models/model-a')).toEqual({
      endpoint: 'model-metadata',
      model: 'model-a',
    });
    expect(match('/v2/models/model-a/ready')).toEqual({
      endpoint: 'model-ready',
      model: 'model-a',
    });
    expect(match('/v2/models/model-a/infer')).toEqual({
      endpoint: 'model-infer',
      model: 'model-a',
    });
    expect(match('/v2/models/model-a/versions/2')).toEqual({
      endpoint: 'model-metadata',
      model: 'model-a',
      version: '2',
    });
    expect(match('/v2/models/model-a/versions/2/infer')).toEqual({
      endpoint: 'model-infer',
      model: 'model-a',
      version: '2',
    });
  });

  it('refuses every other path with 404 unknown_endpoint and what it could have been', () => {
    for (const path of [
      '/v2/health',
      '/v2/health/dead',
      '/v2/health/live/x',
      '/v2/repository',
      '/v2/repository/index/x',
      '/v2/other',
      '/v2/models/model-a/versions',
      '/v2/models/model-a/versions/2/infer/x',
      '/v2/models/model-a/ready/x',
    ]) {
      const [status, code, message] = refused(path);
      expect([path, status, code]).toEqual([path, 404, 'unknown_endpoint']);
      expect(message).toMatch(/GET \/v2\/models\/<model>/);
    }
    expect(refused('/v2/models/model-a/explain')[2]).toBe(
      'no such V2 endpoint for a model: /v2/models/model-a/explain',
    );
    expect(refused('/v2/models/model-a/versions/2/explain')[2]).toBe(
      'no such V2 endpoint for a model: /v2/models/model-a/versions/2/explain',
    );
  });
});
