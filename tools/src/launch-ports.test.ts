import { DEV_OIDC_PORT, GATEWAY_METRICS_PORT, GATEWAY_PORT, portIsFree, SERVICE_NAMES, SERVICES } from '@halo/kit/launch';
import { addressesOf, autoPorts, cannotStartLine, fixedPorts } from './launch-ports';

const everyPort = (p: Awaited<ReturnType<typeof autoPorts>>) => [
  p.gateway,
  p.gatewayMetrics,
  ...SERVICE_NAMES.flatMap((n) => [p.services[n].http, p.services[n].grpc]),
  ...Object.values(p.replicas).flat(),
];

it('fixed: the topology table moved by the offset, as npm start has always listened', async () => {
  const ports = await fixedPorts(100);
  expect(ports.key).toBe('100');
  expect([ports.gateway, ports.gatewayMetrics, ports.devOidc]).toEqual([
    GATEWAY_PORT + 100,
    GATEWAY_METRICS_PORT + 100,
    DEV_OIDC_PORT + 100,
  ]);
  for (const name of SERVICE_NAMES) {
    expect(ports.services[name]).toEqual({ http: SERVICES[name].httpPort + 100, grpc: SERVICES[name].grpcPort + 100 });
  }
  const addresses = addressesOf(ports, undefined);
  expect(addresses.gatewayUrl).toBe(`http://127.0.0.1:${GATEWAY_PORT + 100}`);
  expect(addresses.gatewayMetricsUrl).toBe(`http://127.0.0.1:${GATEWAY_METRICS_PORT + 100}/metrics`);
  expect(addresses.services.content).toEqual({
    url: `http://127.0.0.1:${SERVICES.content.httpPort + 100}`,
    grpcAddr: `127.0.0.1:${SERVICES.content.grpcPort + 100}`,
  });
  expect(addresses).not.toHaveProperty('devOidcUrl');
});

it('auto: every port the OS gives, free and distinct, replicas and later ones included; a record of its own', async () => {
  const [a, b] = await Promise.all([autoPorts({ chat: 3 }), autoPorts()]);
  expect(a.key).toMatch(/^auto-\d+-[0-9a-f]{8}$/);
  expect(b.key).not.toBe(a.key);
  expect(a.devOidc).toBe(0); // the launcher's own listener takes one from the OS
  expect(a.replicas.chat).toHaveLength(2);
  const ports = [...everyPort(a), await a.another(), await a.another()];
  expect(ports).toHaveLength(2 + 2 * SERVICE_NAMES.length + 2 + 2);
  expect(new Set(ports).size).toBe(ports.length);
  for (const port of ports) expect(await portIsFree(port)).toBe(true);
  expect(addressesOf(a, 43_210).devOidcUrl).toBe('http://127.0.0.1:43210');
});

describe('cannotStartLine: why a process could not start', () => {
  const taken = 'gateway: port 36929 is already in use (listen EADDRINUSE: address already in use 127.0.0.1:36929)';
  it('is the one-line reason even when a log line came after it while the process stopped', () => {
    const after = '{"level":50,"msg":"composition refused; keeping the previous one"}';
    expect(cannotStartLine(['{"level":30,"msg":"starting"}', taken, after], 'gateway')).toBe(taken);
  });

  it("is the last line when the process wrote no reason of its own, and never another process's", () => {
    expect(cannotStartLine(['{"level":30}', 'catalog: not this one', 'Error: boom'], 'gateway')).toBe('Error: boom');
    expect(cannotStartLine([], 'gateway')).toBe('');
  });
});
