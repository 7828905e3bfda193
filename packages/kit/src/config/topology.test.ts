import {
  DEV_OIDC_PORT,
  GATEWAY_METRICS_PORT,
  GATEWAY_PORT,
  GRPC_CALLS,
  grpcCallersOf,
  SERVICES,
  SERVICE_NAMES,
  defaultGrpcAddr,
  defaultServiceUrl,
  grpcAddrVar,
  serviceUrlVar,
} from './topology';

describe('topology', () => {
  it('lists every service by its short name', () => {
    expect(SERVICE_NAMES).toEqual(Object.keys(SERVICES));
    for (const name of SERVICE_NAMES) expect(name).toMatch(/^[a-z]+$/);
  });

  it('never gives two listeners the same default port', () => {
    const ports = [
      GATEWAY_PORT,
      GATEWAY_METRICS_PORT,
      DEV_OIDC_PORT,
      ...SERVICE_NAMES.flatMap((n) => [SERVICES[n].httpPort, SERVICES[n].grpcPort]),
    ];
    expect(new Set(ports).size).toBe(ports.length);
  });

  it('keeps the same distinctness under any launcher port offset below 4000 (npm start, e2e systems side by side)', () => {
    // Two systems offset by a and b collide when some port p + a equals another port q + b.
    const others = [GATEWAY_PORT, DEV_OIDC_PORT, ...SERVICE_NAMES.flatMap((n) => [SERVICES[n].httpPort, SERVICES[n].grpcPort])];
    for (const q of others) expect(Math.abs(GATEWAY_METRICS_PORT - q)).toBeGreaterThanOrEqual(4000);
  });

  it('derives variable names and default addresses from the table', () => {
    expect(serviceUrlVar('content')).toBe('CONTENT_URL');
    expect(grpcAddrVar('content')).toBe('CONTENT_GRPC_ADDR');
    expect(defaultServiceUrl('content')).toBe(`http://127.0.0.1:${SERVICES.content.httpPort}`);
    expect(defaultGrpcAddr('content')).toBe(`127.0.0.1:${SERVICES.content.grpcPort}`);
  });

  it("has chat on 4005/5005: it calls content (private chats' members) and no one calls it (it serves health only)", () => {
    expect(SERVICES.chat).toEqual({ httpPort: 4005, grpcPort: 5005 });
    expect(GRPC_CALLS.chat).toEqual(['content']);
    expect(grpcCallersOf('chat')).toEqual([]);
    expect(grpcCallersOf('content').sort()).toEqual(['auth', 'chat']);
  });
});
