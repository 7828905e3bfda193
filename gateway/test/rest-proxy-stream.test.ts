import { createServer, request, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { signAccessToken } from '@halo/kit/auth';
import { listen } from '@halo/kit/process';
import { TEST_JWT_SECRET } from '@halo/kit/testing';
import {
  closeServer,
  composeSupergraph,
  MINIMAL_SUBGRAPH_SDL,
  rawRequest,
  startGateway,
  tempSupergraph,
  until,
  type RunningGateway,
} from './helpers';

/**
 * The REST proxy's own mechanics (src/rest/proxy.ts) against an upstream that shows what reached it
 * and how: hop-by-hop headers both ways, X-Forwarded-*, streamed bodies and the limit on them,
 * connection reuse, and what a client or an upstream that goes away leaves behind.
 */

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  bodyLength: number;
  /** The request ended normally (its whole body arrived). */
  completed: boolean;
  /** The connection closed before the answer was complete. */
  abandoned: boolean;
}

/** An answer far larger than the sockets' buffers, with a pattern that shows any chunk lost or reordered. */
const BIG = Buffer.from(Array.from({ length: 8 * 1024 * 1024 }, (_, i) => (i * 7919) % 251));

/** Sends the second half of a `halves` answer at once. */
let halvesRelease: (() => void) | null = null;

/**
 * An upstream steered by `x-probe`: `halves` sends half its body and the rest later, `hop` answers with hop-by-hop headers and two cookies,
 * `big` answers BIG, `hints` sends 103 Early Hints before its answer, `repeat` repeats a header field,
 * `hang` never answers, `die` sends half an answer and drops the connection, `reset` drops the
 * connection at once; anything else reads the body and answers with what it saw.
 */
async function startProbe() {
  const seen: Seen[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const entry: Seen = { method: req.method!, url: req.url!, headers: req.headers, bodyLength: 0, completed: false, abandoned: false };
    seen.push(entry);
    res.on('close', () => {
      if (!res.writableFinished) entry.abandoned = true;
    });
    const probe = req.headers['x-probe'];
    if (probe === 'hang') return;
    if (probe === 'reset') return void req.socket.destroy();
    req.on('data', (c: Buffer) => (entry.bodyLength += c.length));
    req.on('end', () => {
      entry.completed = true;
      if (probe === 'hop') {
        res.writeHead(200, [
          'content-type',
          'application/json',
          'connection',
          'keep-alive, x-upstream-hop',
          'x-upstream-hop',
          'secret',
          'keep-alive',
          'timeout=5',
          'proxy-connection',
          'keep-alive',
          'x-kept',
          'yes',
          'set-cookie',
          'a=1; Path=/',
          'set-cookie',
          'b=2; Path=/',
          'content-length',
          '2',
        ]);
        return void res.end('{}');
      }
      if (probe === 'hints') {
        res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '11' });
        return void res.end('{"ok":true}');
      }
      if (probe === 'big') {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(BIG.length) });
        return void res.end(BIG);
      }
      if (probe === 'repeat') {
        res.writeHead(200, ['content-type', 'application/json', 'x-repeat', 'a', 'x-repeat', 'b', 'content-length', '2']);
        return void res.end('{}');
      }
      if (probe === 'halves') {
        // Half the body, then the rest only once the test has seen the first half (or after 1 s).
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '20' });
        res.write('0123456789');
        const release = () => {
          halvesRelease = null;
          clearTimeout(late);
          res.end('abcdefghij');
        };
        const late = setTimeout(release, 1000);
        halvesRelease = release;
        return;
      }
      if (probe === 'die') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
        res.write('{"partial":');
        return void setTimeout(() => req.socket.destroy(), 20);
      }
      const payload = JSON.stringify({ ok: true });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
      res.end(payload);
    });
  });
  server.on('connection', (socket: Socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  const port = await listen(server, 0, '127.0.0.1');
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    last: () => seen[seen.length - 1]!,
    /** Connections accepted so far, and open now. */
    connections: () => connections,
    open: () => sockets.size,
    close: () => closeServer(server),
  };
}

let probe: Awaited<ReturnType<typeof startProbe>>;
let supergraph: ReturnType<typeof tempSupergraph>;
let gw: RunningGateway;
const admin = `Bearer ${signAccessToken({ sub: '1', name: 'Admin', role: 'admin' }, TEST_JWT_SECRET, 300)}`;

beforeAll(async () => {
  probe = await startProbe();
  supergraph = tempSupergraph(composeSupergraph([{ name: 'content', sdl: MINIMAL_SUBGRAPH_SDL, url: 'http://127.0.0.1:1/graphql' }]));
  gw = await startGateway({
    CONTENT_URL: probe.url,
    CATALOG_URL: probe.url,
    SUPERGRAPH_PATH: supergraph.path,
    BODY_LIMIT: '1kb',
    JWT_SECRET: TEST_JWT_SECRET,
    UPSTREAM_TIMEOUT_MS: '5000',
  });
});

afterAll(async () => {
  await gw?.stop();
  await probe?.close();
  supergraph?.remove();
});

/** A request whose body is written chunk by chunk, with pauses, from a socket of its own. */
function streamedRequest(opts: {
  method: string;
  path: string;
  headers: Record<string, string>;
  chunks: Buffer[];
  gapMs?: number;
  beforeChunk?: (i: number) => Promise<void>;
}) {
  return new Promise<{ status: number; headers: IncomingHttpHeaders; body: string }>((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: gw.port, method: opts.method, path: opts.path, headers: opts.headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString() }));
      },
    );
    req.on('error', reject);
    void (async () => {
      for (let i = 0; i < opts.chunks.length; i++) {
        await opts.beforeChunk?.(i);
        if (req.destroyed) return;
        req.write(opts.chunks[i]);
        await new Promise((r) => setTimeout(r, opts.gapMs ?? 0));
      }
      req.end();
    })();
  });
}

describe('hop-by-hop headers (RFC 9110 §7.6.1)', () => {
  it('are not forwarded to the service, nor any header the Connection header names', async () => {
    const res = await rawRequest(gw.port, {
      method: 'GET',
      path: '/hello',
      headers: {
        connection: 'keep-alive, x-client-hop',
        'x-client-hop': 'secret',
        'keep-alive': 'timeout=5',
        'proxy-connection': 'keep-alive',
        te: 'trailers',
        upgrade: 'h2c',
        'x-custom': 'kept',
      },
    });
    expect(res.status).toBe(200);
    const { headers } = probe.last();
    for (const name of ['x-client-hop', 'keep-alive', 'proxy-connection', 'te', 'upgrade', 'transfer-encoding'])
      expect([name, headers[name]]).toEqual([name, undefined]);
    // The gateway's own hop to the service is keep-alive, whatever the client said.
    expect(headers.connection).toBe('keep-alive');
    expect(headers['x-custom']).toBe('kept');
  });

  it('are not passed back to the client; end-to-end ones are, every Set-Cookie included', async () => {
    const res = await rawRequest(gw.port, { method: 'GET', path: '/hello', headers: { 'x-probe': 'hop' } });
    expect(res.status).toBe(200);
    for (const name of ['x-upstream-hop', 'keep-alive', 'proxy-connection']) expect([name, res.headers[name]]).toEqual([name, undefined]);
    expect(res.headers['x-kept']).toBe('yes');
    expect(res.headers['set-cookie']).toEqual(['a=1; Path=/', 'b=2; Path=/']);
    expect(res.body).toBe('{}');
  });

  it('a field the service repeats reaches the client as one comma-joined value', async () => {
    const res = await rawRequest(gw.port, { method: 'GET', path: '/hello', headers: { 'x-probe': 'repeat' } });
    expect(res.status).toBe(200);
    expect(res.headers['x-repeat']).toBe('a, b');
    expect(res.body).toBe('{}');
  });

  it('a service’s 103 Early Hints is not relayed: the client gets the final answer alone', async () => {
    const informational: number[] = [];
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: gw.port, path: '/hello', headers: { 'x-probe': 'hints' }, agent: false }, (r) => {
        let body = '';
        r.on('data', (c: Buffer) => (body += c.toString()));
        r.on('end', () => resolve({ status: r.statusCode!, body }));
      });
      req.on('information', (info: { statusCode: number }) => informational.push(info.statusCode));
      req.on('error', reject);
      req.end();
    });
    expect(res).toEqual({ status: 200, body: '{"ok":true}' });
    expect(informational).toEqual([]);
  });
});

describe('forwarding headers (GATEWAY_TRUSTED_PROXIES)', () => {
  it('from an untrusted peer (the default: no proxy is trusted), replaces every X-Forwarded-* with its own', async () => {
    const res = await fetch(`${gw.url}/hello`, {
      headers: {
        'x-forwarded-for': '203.0.113.7',
        'x-forwarded-proto': 'https',
        'x-forwarded-port': '8443',
        'x-forwarded-host': 'halo.example',
      },
    });
    expect(res.status).toBe(200);
    const { headers } = probe.last();
    expect(headers.host).toBe(`127.0.0.1:${gw.port}`);
    expect(headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(headers['x-forwarded-proto']).toBe('http');
    expect(headers['x-forwarded-port']).toBe(String(gw.port));
    expect(headers['x-forwarded-host']).toBe(`127.0.0.1:${gw.port}`);
  });

  it('from a trusted proxy, keeps its chain up to the client (trusted hops after it dropped) and appends to -Proto/-Port', async () => {
    const trusting = await startGateway({
      CONTENT_URL: probe.url,
      SUPERGRAPH_PATH: supergraph.path,
      GATEWAY_TRUSTED_PROXIES: 'loopback, 10.0.0.0/8',
    });
    try {
      const send = (headers: Record<string, string>) => fetch(`${trusting.url}/hello`, { headers }).then(() => probe.last().headers);
      const seen = await send({
        'x-forwarded-for': '198.51.100.1, 203.0.113.7, 10.1.2.3',
        'x-forwarded-proto': 'https',
        'x-forwarded-host': 'halo.example',
      });
      expect(seen['x-forwarded-for']).toBe('198.51.100.1,203.0.113.7');
      expect(seen['x-forwarded-proto']).toBe('https,http');
      expect(seen['x-forwarded-host']).toBe('halo.example');
      expect((await send({}))['x-forwarded-for']).toBe('127.0.0.1');
      expect((await send({ 'x-forwarded-for': '10.9.9.9' }))['x-forwarded-for']).toBe('10.9.9.9');
    } finally {
      await trusting.stop();
    }
  });

  it('refuses a GATEWAY_TRUSTED_PROXIES that is not addresses or ranges, naming the variable', async () => {
    await expect(startGateway({ SUPERGRAPH_PATH: supergraph.path, GATEWAY_TRUSTED_PROXIES: 'ingress.example' })).rejects.toThrow(
      /GATEWAY_TRUSTED_PROXIES: "ingress.example" is not an address/,
    );
    await expect(startGateway({ SUPERGRAPH_PATH: supergraph.path, GATEWAY_TRUSTED_PROXIES: '10.0.0.0/33' })).rejects.toThrow(
      /GATEWAY_TRUSTED_PROXIES/,
    );
  });
});

describe('bodies', () => {
  it('streams a body without Content-Length through (chunked), counted but not buffered', async () => {
    const res = await streamedRequest({
      method: 'POST',
      path: '/greet',
      headers: { 'content-type': 'application/octet-stream' },
      chunks: [Buffer.alloc(300, 1), Buffer.alloc(300, 2), Buffer.alloc(300, 3)],
      gapMs: 10,
    });
    expect(res.status).toBe(200);
    const seen = probe.last();
    expect(seen.bodyLength).toBe(900);
    expect(seen.headers['transfer-encoding']).toBe('chunked');
    expect(seen.headers['content-length']).toBeUndefined();
  });

  it('a DELETE with a streamed body is framed too (node does not chunk DELETE by default)', async () => {
    const res = await streamedRequest({
      method: 'DELETE',
      path: '/products/7',
      // Node's client would not frame it either without this.
      headers: { authorization: admin, 'content-type': 'text/plain', 'transfer-encoding': 'chunked' },
      chunks: [Buffer.from('because'), Buffer.from(' reasons')],
    });
    expect([res.status, res.body]).toEqual([200, '{"ok":true}']);
    expect(probe.last()).toMatchObject({ method: 'DELETE', url: '/products/7', bodyLength: 15, completed: true });
  });

  it('a streamed body that passes the limit without Content-Length → 413, and the upstream request is aborted', async () => {
    const before = probe.seen.length;
    const res = await streamedRequest({
      method: 'POST',
      path: '/greet',
      headers: { 'content-type': 'application/octet-stream' },
      chunks: [Buffer.alloc(700, 1), Buffer.alloc(700, 2)],
      // The second chunk goes only once the service holds the request with the first.
      beforeChunk: async (i) => {
        if (i === 1) await until(() => probe.seen.length > before && probe.last().bodyLength === 700);
      },
    });
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body)).toEqual({ error: 'Payload too large' });
    expect(res.headers.connection).toBe('close');
    expect(res.headers['cache-control']).toBe('no-store');
    const seen = probe.seen[before]!;
    await until(() => seen.abandoned, 2000);
    expect(seen.completed).toBe(false);
  });

  it('a declared Content-Length over the limit on a streamed type → 413 before the service is called', async () => {
    const before = probe.seen.length;
    const res = await rawRequest(gw.port, {
      method: 'POST',
      path: '/greet',
      headers: { 'content-type': 'text/plain' },
      declaredLength: 4096,
    });
    expect(res.status).toBe(413);
    expect(res.headers.connection).toBe('close');
    expect(probe.seen.length).toBe(before);
  });

  it('JSON that is not valid UTF-8 → 400 Invalid JSON at the gateway', async () => {
    const before = probe.seen.length;
    const body = Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}')]);
    const res = await fetch(`${gw.url}/greet`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 'Invalid JSON' });
    expect(probe.seen.length).toBe(before);
  });

  it('a compressed JSON body is the service’s to judge: streamed through unchecked', async () => {
    const res = await fetch(`${gw.url}/greet`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: Buffer.from('not really gzip'),
    });
    expect(res.status).toBe(200);
    expect(probe.last().bodyLength).toBe(15);
  });
});

describe('connections', () => {
  it('reuses pooled keep-alive connections to the service', async () => {
    await (await fetch(`${gw.url}/hello`)).text();
    const before = probe.connections();
    for (let i = 0; i < 20; i++) await (await fetch(`${gw.url}/hello`)).text();
    expect(probe.connections()).toBe(before);
  });

  it('a client that leaves aborts the upstream request and releases its socket', async () => {
    const before = probe.seen.length;
    const openBefore = probe.open();
    const ac = new AbortController();
    const pending = fetch(`${gw.url}/hello`, { headers: { 'x-probe': 'hang' }, signal: ac.signal }).catch((err: Error) => err.name);
    await until(() => probe.seen.length > before);
    ac.abort();
    expect(await pending).toBe('AbortError');
    const seen = probe.seen[before]!;
    // Well before UPSTREAM_TIMEOUT_MS would have ended it.
    await until(() => seen.abandoned, 2000);
    // The socket that carried it is closed, not parked in the pool with a request in flight.
    await until(() => probe.open() <= openBefore, 2000);
    const after = await fetch(`${gw.url}/hello`);
    expect(after.status).toBe(200);
  });

  it('a service that drops the connection before answering → 502 Bad gateway', async () => {
    const res = await fetch(`${gw.url}/hello`, { headers: { 'x-probe': 'reset' } });
    expect(res.status).toBe(502);
    expect(await res.json()).toEqual({ error: 'Bad gateway' });
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('a service that drops the connection while a body streams in → 502, and the client’s connection closes', async () => {
    const res = await streamedRequest({
      method: 'POST',
      path: '/greet',
      headers: { 'content-type': 'application/octet-stream', 'x-probe': 'reset' },
      chunks: [Buffer.alloc(100, 1), Buffer.alloc(100, 2)],
      gapMs: 100,
    });
    expect(res.status).toBe(502);
    expect(JSON.parse(res.body)).toEqual({ error: 'Bad gateway' });
    expect(res.headers.connection).toBe('close');
  });

  it('a large answer to a client that reads late arrives whole (backpressure both ways, nothing lost)', async () => {
    const got = await new Promise<{ status: number; body: Buffer }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: gw.port, path: '/hello', headers: { 'x-probe': 'big' }, agent: false }, (r) => {
        const chunks: Buffer[] = [];
        // Not read for a while: the gateway's buffers fill and it must hold the service back.
        r.pause();
        setTimeout(() => {
          r.on('data', (c: Buffer) => chunks.push(c));
          r.on('end', () => resolve({ status: r.statusCode!, body: Buffer.concat(chunks) }));
          r.resume();
        }, 300);
      });
      req.on('error', reject);
      req.end();
    });
    expect(got.status).toBe(200);
    expect(got.body.length).toBe(BIG.length);
    expect(got.body.equals(BIG)).toBe(true);
  });

  it('an answer that arrives in parts is relayed as it arrives: the first part before the service sends the rest', async () => {
    const got = await new Promise<{ firstBeforeRest: boolean; body: string; length: string | undefined }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: gw.port, path: '/hello', headers: { 'x-probe': 'halves' }, agent: false }, (r) => {
        let body = '';
        let firstBeforeRest: boolean | null = null;
        r.setEncoding('utf8');
        r.on('data', (c: string) => {
          if (firstBeforeRest === null) {
            firstBeforeRest = halvesRelease !== null && c === '0123456789';
            halvesRelease?.();
          }
          body += c;
        });
        r.on('end', () => resolve({ firstBeforeRest: firstBeforeRest === true, body, length: r.headers['content-length'] }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(got).toEqual({ firstBeforeRest: true, body: '0123456789abcdefghij', length: '20' });
  });

  it('a service that dies mid-answer → the client’s answer is cut too (never a silent truncation)', async () => {
    const res = await fetch(`${gw.url}/hello`, { headers: { 'x-probe': 'die' } });
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
    expect((await fetch(`${gw.url}/hello`)).status).toBe(200);
  });
});

describe('service base URLs', () => {
  it('a base URL with a path is put before every request path, as http-proxy did', async () => {
    const based = await startGateway({ CONTENT_URL: `${probe.url}/base/`, SUPERGRAPH_PATH: supergraph.path });
    try {
      expect((await fetch(`${based.url}/hello?x=1`)).status).toBe(200);
      expect(probe.last().url).toBe('/base/hello?x=1');
    } finally {
      await based.stop();
    }
  });
});
