import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TollgateError } from '../../../common/errors.js';
import { loadGatewayConfig } from '../../../gateway/config.js';

const OIDC = { TOLLGATE_OIDC_ISSUER: 'https://idp.example/realms/data', TOLLGATE_OIDC_AUDIENCE: 'tollgate' };

describe('loadGatewayConfig', () => {
  it('reads the sign-in and administrator settings, with defaults a provider works with', () => {
    const config = loadGatewayConfig({
      env: {
        ...OIDC,
        TOLLGATE_OIDC_CLIENT_ID: 'tollgate-panel',
        TOLLGATE_OIDC_AUTHORIZED_PARTIES: 'tollgate-panel,tollgate-cli',
        TOLLGATE_ADMIN_GROUPS: ' platform-admins, security ,',
      },
    });
    expect(config.oidc).toEqual({
      issuer: 'https://idp.example/realms/data',
      audience: 'tollgate',
      clientId: 'tollgate-panel',
      authorizedParties: ['tollgate-panel', 'tollgate-cli'],
      scopes: 'openid profile email groups',
      clockToleranceSeconds: 30,
    });
    expect(config.adminGroups).toEqual(['platform-admins', 'security']);
    expect(config.groupsClaim).toBe('groups');
    // Nobody is an administrator unless configured.
    expect(loadGatewayConfig({ env: OIDC }).adminGroups).toEqual([]);
  });

  it('takes as redirectPath only a path of this gateway, never one a browser reads as another origin', () => {
    const redirect = (path: string) => () =>
      loadGatewayConfig({ env: { ...OIDC, TOLLGATE_OIDC_REDIRECT_PATH: path } }).oidc?.redirectPath;
    expect(redirect('/panel/')()).toBe('/panel/');
    for (const bad of [
      '//evil.example/',
      '/\\evil.example/',
      '/panel\\..\\x',
      'panel/',
      'https://evil.example/',
    ])
      expect(redirect(bad)).toThrow(/redirectPath is a path on this gateway/);
  });

  it('takes no port from the service links Kubernetes writes for Services named tollgate, tollgate-grpc or tollgate-metrics', () => {
    const config = loadGatewayConfig({
      env: {
        TOLLGATE_PORT: 'tcp://10.96.0.7:80',
        TOLLGATE_GRPC_PORT: 'tcp://10.96.0.8:9000',
        TOLLGATE_METRICS_PORT: 'tcp://10.96.0.9:9090',
        TOLLGATE_METRICS_PORT_9090_TCP: 'tcp://10.96.0.9:9090',
        TOLLGATE_METRICS_SERVICE_HOST: '10.96.0.9',
      },
      overrides: { port: 8000 },
    });
    expect([config.port, config.metricsPort]).toEqual([8000, undefined]);
    // A port written as a port is still read.
    expect(loadGatewayConfig({ env: { TOLLGATE_METRICS_PORT: '9191' } }).metricsPort).toBe(9191);
  });

  it('layers defaults, file, environment and flags, merging upstreams', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-config-'));
    const file = join(dir, 'gateway.yaml');
    writeFileSync(
      file,
      'port: 9000\nupstreams:\n  datasets: http://127.0.0.1:7001\n  services: http://127.0.0.1:7002\n',
    );
    const config = loadGatewayConfig({
      file,
      env: { TOLLGATE_REDIS_URL: 'redis://10.0.0.1:6380', TOLLGATE_UPSTREAMS: 'services=http://10.0.0.2:80' },
      overrides: { port: 9100 },
    });
    expect(config.port).toBe(9100);
    expect(config.redisUrl).toBe('redis://10.0.0.1:6380');
    expect(config.upstreams).toEqual({ datasets: 'http://127.0.0.1:7001', services: 'http://10.0.0.2:80' });
    expect(config.bodyLimitBytes).toBe(10 * 1024 * 1024);
  });

  it.each([
    [{ TOLLGATE_PORT: 'eighty' }, 'port'],
    [{ TOLLGATE_UPSTREAMS: 'datasets=ftp://x' }, 'upstreams.datasets'],
    [{ TOLLGATE_UPSTREAMS: 'Bad_Name=http://x' }, 'upstreams.Bad_Name'],
    [{ TOLLGATE_REDIS_URL: 'http://x' }, 'redisUrl'],
    [{ TOLLGATE_OIDC_ISSUER: 'urn:test', TOLLGATE_OIDC_AUDIENCE: 'tollgate' }, 'oidc.jwksUrl'],
    [
      {
        TOLLGATE_OIDC_ISSUER: 'urn:test',
        TOLLGATE_OIDC_AUDIENCE: 'tollgate',
        TOLLGATE_OIDC_JWKS_URL: 'https://idp.example/keys',
        TOLLGATE_OIDC_CLIENT_ID: 'panel',
      },
      'oidc.issuer',
    ],
    [{ ...OIDC, TOLLGATE_OIDC_SCOPES: 'profile email' }, 'oidc.scopes'],
    [{ ...OIDC, TOLLGATE_OIDC_SCOPES: 'openid  email' }, 'oidc.scopes'],
    [{ ...OIDC, TOLLGATE_OIDC_REDIRECT_PATH: 'panel/' }, 'oidc.redirectPath'],
    [{ ...OIDC, TOLLGATE_OIDC_CLOCK_TOLERANCE_SECONDS: '-1' }, 'oidc.clockToleranceSeconds'],
    [{ TOLLGATE_HELD_BYTES_LIMIT: String(1024 * 1024) }, 'heldBytesLimit'],
  ])('refuses %p naming the field', (env, field) => {
    try {
      loadGatewayConfig({ env });
      throw new Error('accepted');
    } catch (err) {
      expect(err).toBeInstanceOf(TollgateError);
      expect((err as TollgateError).code).toBe('invalid_config');
      expect((err as TollgateError).field).toBe(field);
    }
  });
});
