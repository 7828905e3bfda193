import {
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
    const ports = [GATEWAY_PORT, ...SERVICE_NAMES.flatMap((n) => [SERVICES[n].httpPort, SERVICES[n].grpcPort])];
    expect(new Set(ports).size).toBe(ports.length);
  });

  it('derives variable names and default addresses from the table', () => {
    expect(serviceUrlVar('content')).toBe('CONTENT_URL');
    expect(grpcAddrVar('content')).toBe('CONTENT_GRPC_ADDR');
    expect(defaultServiceUrl('content')).toBe(`http://127.0.0.1:${SERVICES.content.httpPort}`);
    expect(defaultGrpcAddr('content')).toBe(`127.0.0.1:${SERVICES.content.grpcPort}`);
  });

  it('has chat on 4005/5005: it calls no one over gRPC and no one calls it (it serves health only)', () => {
    expect(SERVICES.chat).toEqual({ httpPort: 4005, grpcPort: 5005 });
    expect(GRPC_CALLS.chat).toEqual([]);
    expect(grpcCallersOf('chat')).toEqual([]);
  });
});
