import { GatewayMetrics } from '../../../gateway/metrics.js';

describe('the model series of a gateway', () => {
  it('an idle model version’s series go (names are their teams’); a busy or recent one’s stay', async () => {
    const metrics = new GatewayMetrics();
    const done = metrics.modelCall('model-gone', 'v1');
    done.runtime(0.01);
    done.end(200);
    metrics.modelCall('model-gone', 'v1').end(422, 'invalid_shape', true);
    metrics.shadowCall('model-gone', 'v1', 'agreed', 0.02);
    metrics.fallback('model-gone', 'v1', 'model_failed');
    const busy = metrics.modelCall('model-busy', '');
    const text = () => metrics.registry.metrics();
    expect(await text()).toContain('model="model-gone"');
    // Everything called before "now" is idle; the busy one has a call in flight.
    await metrics.forgetIdleModels(Date.now() + 1);
    const after = await text();
    expect(after).not.toContain('model-gone');
    expect(after).toContain('tollgate_model_in_flight{model="model-busy",version=""} 1');
    busy.end(200);
    // Called again, it counts anew.
    metrics.modelCall('model-gone', 'v1').end(200);
    expect(await text()).toContain(
      'tollgate_model_requests_total{model="model-gone",version="v1",status="200",code=""} 1',
    );
  });
});
