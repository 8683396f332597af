/**
 * A gRPC load generator for the inference bench, in a process of its own (the gateway's event loop
 * stays the gateway's): `tsx bench/grpc-load.ts <host:port> <model> <key> <seconds> <in flight>`.
 * Keeps that many ModelInfer calls in flight on one channel (two warm-up seconds first) and prints
 * `{"rps", "p50", "p99", "bad"}` (milliseconds).
 */
import { InferenceClient } from '../test/harness/grpc-clients.js';

const [address = '', model = '', key = '', seconds = '10', inFlight = '32'] = process.argv.slice(2);
const client = new InferenceClient(address);
const request = {
  model_name: model,
  inputs: [{ name: 'features', datatype: 'FP32', shape: [2, 4] }],
  raw_input_contents: [Buffer.from(new Float32Array([5.1, 3.5, 1.4, 0.2, 6.7, 3.0, 5.2, 2.3]).buffer)],
};
const headers = { authorization: `Apikey ${key}` };

async function drive(ms: number): Promise<{ latencies: number[]; bad: number }> {
  const latencies: number[] = [];
  let bad = 0;
  const until = Date.now() + ms;
  const loop = async (): Promise<void> => {
    while (Date.now() < until) {
      const started = performance.now();
      const r = await client.call('ModelInfer', request, headers);
      if (r.error) bad++;
      else latencies.push(performance.now() - started);
    }
  };
  await Promise.all(Array.from({ length: Number(inFlight) }, loop));
  return { latencies, bad };
}

await drive(2_000);
const { latencies, bad } = await drive(Number(seconds) * 1000);
latencies.sort((a, b) => a - b);
const at = (q: number): number =>
  latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
process.stdout.write(
  `${JSON.stringify({ rps: latencies.length / Number(seconds), p50: at(0.5), p99: at(0.99), bad })}\n`,
);
client.close();
