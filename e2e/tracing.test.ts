import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startE2ESystem } from './helpers';

/**
 * OpenTelemetry across the real processes: every process exports OTLP/HTTP (JSON) to a receiver
 * in this test, configured only by the standard OTEL_* variables. One client request is one trace
 * through the gateway, the services it reaches, their gRPC calls and their SQL, and the log lines
 * written for it carry its trace id.
 */
interface Span {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
}

const spans: Span[] = [];
let receiver: Server;
let sys: Awaited<ReturnType<typeof startE2ESystem>>;
const PROCESSES = ['gateway', 'auth', 'content', 'catalog', 'payments', 'chat'];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans?: {
            resource?: { attributes?: { key: string; value: { stringValue?: string } }[] };
            scopeSpans?: { spans?: Omit<Span, 'service'>[] }[];
          }[];
        };
        for (const rs of body.resourceSpans ?? []) {
          const service = rs.resource?.attributes?.find((a) => a.key === 'service.name')?.value.stringValue ?? '?';
          for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) spans.push({ ...s, service });
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((ok) => receiver.listen(0, '127.0.0.1', ok));
  const endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  const otel = {
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100',
    OTEL_METRICS_EXPORTER: 'none',
    OTEL_LOGS_EXPORTER: 'none',
    LOG_LEVEL: 'info',
  };
  sys = await startE2ESystem({ postgres: true, envFor: Object.fromEntries(PROCESSES.map((p) => [p, otel])) });
}, 120_000);

afterAll(async () => {
  await sys?.stop();
  await new Promise((ok) => receiver?.close(ok));
});

async function until(ok: () => boolean, what: string, timeoutMs = 10_000) {
  const end = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > end)
      throw new Error(`timed out waiting for ${what}; services seen: ${[...new Set(spans.map((s) => s.service))].join(', ')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

it('with tracing on, each traced process runs its compiled entry, where instrumentation can hook require', () => {
  for (const p of sys.system.processes.filter((proc) => PROCESSES.includes(proc.name))) {
    const command = readFileSync(`/proc/${p.child.pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
    expect(command).toMatch(/\/dist\/main\.js $/);
  }
});

it('a login is one trace: gateway → auth → content over gRPC → PostgreSQL, and its log lines carry the trace id', async () => {
  const res = await fetch(`${sys.url}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'alice@halo.local', password: 'password123' }),
  });
  expect(res.status).toBe(200);
  const requestId = res.headers.get('x-request-id')!;
  // The trace of this request: the gateway's server span for POST /auth/login.
  await until(() => spans.some((s) => s.service === 'halo-gateway' && s.kind === 2), 'the gateway span');
  const root = spans.find((s) => s.service === 'halo-gateway' && s.kind === 2 && !s.parentSpanId)!;
  const inTrace = () => spans.filter((s) => s.traceId === root.traceId);
  await until(
    () =>
      ['halo-auth', 'halo-content'].every((svc) => inTrace().some((s) => s.service === svc)) &&
      inTrace().some((s) => /pg\.|SELECT|postgres/i.test(s.name)),
    'auth, content and SQL spans in the same trace',
  );
  const services = new Set(inTrace().map((s) => s.service));
  expect(services).toEqual(expect.objectContaining(new Set(['halo-gateway', 'halo-auth', 'halo-content'])));
  // The hop from auth to content is gRPC: a client span in auth, a server span in content.
  expect(inTrace().some((s) => s.service === 'halo-auth' && s.kind === 3 && s.name.includes('UserService'))).toBe(true);
  expect(inTrace().some((s) => s.service === 'halo-content' && s.kind === 2 && s.name.includes('UserService'))).toBe(true);
  // Every span of the trace hangs off another one of it (one tree, one root). Each process exports
  // its spans in batches as they end, so a parent (auth's server span, the gateway's client span)
  // can arrive a batch after its children: wait for the tree to close, then check it.
  const unparented = () => {
    const ids = new Set(inTrace().map((s) => s.spanId));
    return inTrace().filter((s) => !s.parentSpanId || !ids.has(s.parentSpanId));
  };
  await until(() => unparented().length === 1, 'every span of the trace to hang off another');
  expect(unparented()).toHaveLength(1);

  // The gateway's access log line for this request carries the trace id.
  await until(
    () => sys.logs.some((l) => l.startsWith('gateway|') && l.includes(requestId) && l.includes('"trace_id"')),
    'a gateway log line with trace_id',
  );
  const line = sys.logs.find((l) => l.startsWith('gateway|') && l.includes(requestId) && l.includes('"trace_id"'))!;
  expect(JSON.parse(line.slice(line.indexOf('{'))).trace_id).toBe(root.traceId);
});

it('a federated query is one trace across the gateway and the subgraph it calls', async () => {
  const before = spans.length;
  const res = await fetch(`${sys.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ posts(first: 1) { edges { node { title author { name } } } } }' }),
  });
  expect(res.status).toBe(200);
  await until(() => spans.slice(before).some((s) => s.service === 'halo-content' && s.kind === 2), 'the content span');
  const contentSpan = spans.slice(before).find((s) => s.service === 'halo-content' && s.kind === 2)!;
  const inTrace = () => spans.filter((s) => s.traceId === contentSpan.traceId);
  // Each process exports its spans in batches as they end: the gateway's can arrive after content's.
  await until(
    () =>
      inTrace().some((s) => s.service === 'halo-gateway' && s.kind === 2) &&
      inTrace().some((s) => s.service === 'halo-gateway' && s.kind === 3),
    "the gateway's spans of the trace",
  );
  const trace = inTrace();
  expect(trace.some((s) => s.service === 'halo-gateway' && s.kind === 2)).toBe(true);
  // The gateway's fetch to the subgraph is a client span (undici) in the same trace.
  expect(trace.some((s) => s.service === 'halo-gateway' && s.kind === 3)).toBe(true);
});

it("a client's traceparent on a proxied REST request: the service's span hangs off the gateway's client span, in the client's trace", async () => {
  // Three routes of three services, each with a trace of the client's own.
  const calls: [string, RequestInit][] = [
    ['/products/4', {}],
    ['/greet', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Budi' }) }],
    ['/posts/2', {}],
  ];
  for (const [path, init] of calls) {
    const traceId = randomBytes(16).toString('hex');
    const traceparent = `00-${traceId}-${randomBytes(8).toString('hex')}-01`;
    const res = await fetch(`${sys.url}${path}`, { ...init, headers: { ...init.headers, traceparent, tracestate: 'client=1' } });
    expect(res.status).toBe(200);
    const inTrace = () => spans.filter((s) => s.traceId === traceId);
    const gatewayClient = () => inTrace().find((s) => s.service === 'halo-gateway' && s.kind === 3);
    const serviceServer = () => inTrace().find((s) => s.service !== 'halo-gateway' && s.kind === 2);
    await until(() => gatewayClient() !== undefined && serviceServer() !== undefined, `the spans of ${path} in the client's trace`);
    // The service's server span is the child of the gateway's proxied request, not a new root.
    expect(serviceServer()!.parentSpanId).toBe(gatewayClient()!.spanId);
    // And the gateway's own server span joined the client's trace.
    expect(inTrace().some((s) => s.service === 'halo-gateway' && s.kind === 2)).toBe(true);
  }
});
