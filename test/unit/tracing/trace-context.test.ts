// Whose trace a call joins: a trusted proxy's traceparent is the call's parent, anyone else's is
// ignored; an upstream gets the gateway's own, or (tracing off) a trusted caller's as it came.
import { trace, ROOT_CONTEXT } from '@opentelemetry/api';
import { CidrAllowlist } from '../../../common/net/cidr.js';
import { NO_PROXIES } from '../../../gateway/http/client-address.js';
import { routeOf, trustedParent } from '../../../gateway/tracing/http-call.js';
import { upstreamRequestHeaders } from '../../../gateway/proxy/headers.js';
import type { KeyGrant } from '../../../common/resources/grant.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';
const head = (peer: string, headers: Record<string, string>) => ({
  method: 'GET',
  url: '/',
  headers,
  rawHeaders: Object.entries(headers).flat(),
  socket: { remoteAddress: peer },
});
const proxy = { hops: 1, proxies: new CidrAllowlist(['10.0.0.0/8']) };
const grant: KeyGrant = { id: 'k1', owner: 'alice', module: 'platform', roles: ['viewer'] };

describe('trace context', () => {
  const traceparent = `00-${TRACE}-${PARENT}-01`;

  it('takes a trusted proxy’s traceparent as the call’s parent', () => {
    const parent = trace.getSpanContext(trustedParent(head('10.1.2.3', { traceparent }), proxy));
    expect([parent?.traceId, parent?.spanId, parent?.isRemote]).toEqual([TRACE, PARENT, true]);
  });

  it('ignores the traceparent of a caller that reached the gateway directly, or of any caller when no proxy is trusted', () => {
    expect(trustedParent(head('192.0.2.7', { traceparent }), proxy)).toBe(ROOT_CONTEXT);
    expect(trustedParent(head('10.1.2.3', { traceparent }), NO_PROXIES)).toBe(ROOT_CONTEXT);
  });

  it('ignores a traceparent that is not one (all-zero ids, a bad version, garbage)', () => {
    for (const bad of [`00-${'0'.repeat(32)}-${PARENT}-01`, `ff-${TRACE}-${PARENT}-01`, 'garbage']) {
      expect(
        trace.getSpanContext(trustedParent(head('10.1.2.3', { traceparent: bad }), proxy)),
      ).toBeUndefined();
    }
  });

  it('passes a trusted caller’s trace headers upstream when the gateway makes no span, and nobody else’s', () => {
    const sent = { traceparent, tracestate: 'vendor=1' };
    const trusted = upstreamRequestHeaders(head('10.1.2.3', sent), grant, 'r1', proxy);
    expect(trusted).toEqual(expect.arrayContaining(['traceparent', traceparent, 'tracestate', 'vendor=1']));
    const direct = upstreamRequestHeaders(head('192.0.2.7', sent), grant, 'r1', proxy);
    expect(direct.map((h) => h.toLowerCase())).not.toContain('traceparent');
    expect(direct.map((h) => h.toLowerCase())).not.toContain('tracestate');
  });

  it.each([
    [['events', 'bda', 'wf-a', 'svc', 'x'], '/events/bda/{workflow}/{service}/*'],
    [['events', 'platform', 'api', 'v1', 'datasets'], '/events/platform/api/v1/{resource}/*'],
    [['v2', 'models', 'model-a', 'infer'], '/v2/models/{model}/infer'],
    [['v2', 'models', 'model-a', 'versions', 'v2', 'infer'], '/v2/models/{model}/versions/{version}/infer'],
    [['v2', 'models', 'model-a'], '/v2/models/{model}'],
    [['v2', 'health', 'ready'], '/v2/health/ready'],
    [['v2', 'models', 'model-a', 'ready'], '/v2/models/{model}/ready'],
    [['panel', 'js', 'main.js'], '/panel'],
    // Whatever else a caller writes is one name, however many it tries.
    [['auth', 'x'.repeat(500)], '/{unmatched}'],
    [['v2', 'anything-at-all'], '/{unmatched}'],
    [['v2', 'models', 'model-a', 'whatever', 'else'], '/{unmatched}'],
    [['api', 'v1', 'no-such-resource'], '/{unmatched}'],
    [['wp-login.php'], '/{unmatched}'],
    [['auth', 'request'], '/auth/request'],
    [['api', 'v1', 'apikeys', 'k1'], '/api/v1/apikeys/*'],
    [[], '/'],
  ])('names %j by its route template %s, never by a name in it', (segments, route) => {
    expect(routeOf(segments)).toBe(route);
  });
});
