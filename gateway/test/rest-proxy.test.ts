import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { connect } from 'node:net';
import { signAccessToken } from '@halo/kit/auth';
import { createLogger } from '@halo/kit/logging';
import { TEST_JWT_SECRET, testIdentity } from '@halo/kit/testing';
import {
  closedPort,
  composeSupergraph,
  MINIMAL_SUBGRAPH_SDL,
  rawRequest,
  startEcho,
  startGateway,
  tempSupergraph,
  until,
  type Echoed,
  type RunningGateway,
} from './helpers';

/** The REST proxy mechanics, against a plain echo upstream standing in for the content service. */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let echo: Awaited<ReturnType<typeof startEcho>>;
let supergraph: ReturnType<typeof tempSupergraph>;
let gw: RunningGateway;

beforeAll(async () => {
  echo = await startEcho();
  supergraph = tempSupergraph(composeSupergraph([{ name: 'content', sdl: MINIMAL_SUBGRAPH_SDL, url: 'http://127.0.0.1:1/graphql' }]));
  gw = await startGateway({
    CONTENT_URL: echo.url,
    AUTH_URL: echo.url,
    SUPERGRAPH_PATH: supergraph.path,
    BODY_LIMIT: '1kb',
    JWT_SECRET: TEST_JWT_SECRET,
    // Nothing listens here: an API key must fail closed (503), never pass unchecked.
    AUTH_GRPC_ADDR: '127.0.0.1:1',
    GRPC_DEADLINE_MS: '300',
  });
});

afterAll(async () => {
  await gw?.stop();
  await echo?.close();
  supergraph?.remove();
});

async function call(path: string, init?: RequestInit) {
  const res = await fetch(gw.url + path, init);
  const text = await res.text();
  return { res, text, json: () => JSON.parse(text) as Record<string, unknown> };
}

async function echoed(path: string, init?: RequestInit): Promise<{ res: Response; seen: Echoed }> {
  const { res, text } = await call(path, init);
  expect(res.headers.get('x-echo')).toBe('yes');
  return { res, seen: JSON.parse(text) as Echoed };
}

/**
 * A client over a raw socket that sends the head and 2 kB of a body over the limit, waits for the
 * gateway to have answered, writes 256 kB more, and only then reads: what it finally received.
 */
async function slowWriter(path: string, type: string, framing: 'length' | 'chunked'): Promise<string> {
  const socket = connect(gw.port, '127.0.0.1');
  await once(socket, 'connect');
  const frame = (b: Buffer) =>
    framing === 'chunked' ? Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n')]) : b;
  const length = framing === 'length' ? `Content-Length: ${2048 + 256 * 1024}` : 'Transfer-Encoding: chunked';
  const received: Buffer[] = [];
  const ended = new Promise<void>((resolve, reject) => {
    socket.on('error', reject);
    socket.on('end', resolve);
  });
  socket.on('data', (c: Buffer) => received.push(c));
  socket.pause();
  socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\n${length}\r\n\r\n`);
  socket.write(frame(Buffer.alloc(2048, 0x61)));
  await new Promise((r) => setTimeout(r, 150));
  socket.write(frame(Buffer.alloc(256 * 1024, 0x61)));
  if (framing === 'chunked') socket.write('0\r\n\r\n');
  await new Promise((r) => setTimeout(r, 150));
  socket.resume();
  await ended;
  socket.destroy();
  return Buffer.concat(received).toString('latin1');
}

describe('protected routes', () => {
  it('without credentials → 401 Token required, and the service is never called', async () => {
    const before = echo.count();
    for (const init of [{}, { headers: { authorization: '' } }, { headers: { authorization: 'Bearer ' } }]) {
      const { res, json } = await call('/profile', init);
      expect(res.status).toBe(401);
      expect(json()).toEqual({ error: 'Token required' });
    }
    expect(echo.count()).toBe(before);
  });

  it('an invalid, foreign or expired token → 401 Invalid token', async () => {
    const foreign = signAccessToken({ sub: '1', name: 'X', role: 'admin' }, 'someone-elses-secret-of-32-bytes-or-more', 300);
    const expired = signAccessToken({ sub: '1', name: 'X', role: 'admin' }, TEST_JWT_SECRET, -120);
    for (const token of ['garbage', foreign, expired]) {
      const { res, json } = await call('/auth/api-keys', { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(401);
      expect(json()).toEqual({ error: 'Invalid token' });
    }
  });

  it('a valid token is proxied with the Authorization header intact', async () => {
    const token = signAccessToken({ sub: '2', name: 'Alice', role: 'user' }, TEST_JWT_SECRET, 300);
    const { res, seen } = await echoed('/profile', { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    expect(seen.headers.authorization).toBe(`Bearer ${token}`);
  });

  it('an API key while auth is unreachable → 503, not a pass', async () => {
    const { res, json } = await call('/profile', { headers: { 'x-api-key': 'halo_abcdefgh_whatever' } });
    expect(res.status).toBe(503);
    expect(json()).toEqual({ error: 'Upstream service unavailable' });
  });

  it('public routes are not checked at the edge', async () => {
    const { res } = await echoed('/hello', { headers: { authorization: 'Bearer garbage' } });
    expect(res.status).toBe(200);
  });
});

describe('proxying', () => {
  it('forwards a GET with its path, query and headers, and passes the answer back', async () => {
    const { res, seen } = await echoed('/posts/42?x=1&y=two', {
      headers: { authorization: 'Bearer abc', 'x-custom': 'kept', 'x-echo-status': '203' },
    });
    expect(res.status).toBe(203);
    expect(seen.method).toBe('GET');
    expect(seen.url).toBe('/posts/42?x=1&y=two');
    expect(seen.headers.authorization).toBe('Bearer abc');
    expect(seen.headers['x-custom']).toBe('kept');
    expect(seen.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(seen.headers['x-forwarded-proto']).toBe('http');
    expect(seen.bodyLength).toBe(0);
  });

  it('vouches with its service token to auth only (audience auth), and never relays a client’s own', async () => {
    const forged = { 'x-halo-service-token': 'from-a-client' };
    const toAuth = await echoed('/auth/login', { method: 'POST', headers: { ...forged, 'content-type': 'application/json' }, body: '{}' });
    const token = toAuth.seen.headers['x-halo-service-token'] as string;
    expect(await testIdentity('auth').verify(token)).toBe('gateway');
    await expect(testIdentity('content').verify(token)).rejects.toThrow('Invalid service token');
    const toContent = await echoed('/posts/1', { headers: forged });
    expect(toContent.seen.headers['x-halo-service-token']).toBeUndefined();
  });

  it("does not copy the client's trace context: the tracing instrumentation writes the gateway's own", async () => {
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const { seen } = await echoed('/hello', { headers: { traceparent, tracestate: 'client=1', baggage: 'k=v' } });
    expect(seen.headers).not.toHaveProperty('traceparent');
    expect(seen.headers).not.toHaveProperty('tracestate');
    expect(seen.headers).not.toHaveProperty('baggage');
  });

  it('routes every content path', async () => {
    for (const path of ['/hello', '/users/7/posts', '/posts/1', '/posts/1/comments']) {
      const { res, seen } = await echoed(path);
      expect(res.status).toBe(200);
      expect(seen.url).toBe(path);
    }
  });

  it('serves HEAD where GET is', async () => {
    const res = await fetch(`${gw.url}/hello`, { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-echo')).toBe('yes');
  });

  it('forwards a JSON POST body byte for byte with its Content-Length', async () => {
    const body = '{ "name" : "Budi",\n  "emoji": "😀" }';
    const { res, seen } = await echoed('/greet', {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body,
    });
    expect(res.status).toBe(200);
    expect(seen.method).toBe('POST');
    expect(Buffer.from(seen.body, 'base64').toString('utf8')).toBe(body);
    expect(seen.headers['content-length']).toBe(String(Buffer.byteLength(body)));
    expect(seen.headers['content-type']).toBe('application/json; charset=utf-8');
  });

  it('turns a chunked body into one with a Content-Length', async () => {
    const parts = ['{"name":', '"Budi"', '}'].map((s) => Buffer.from(s));
    const res = await rawRequest(gw.port, {
      method: 'POST',
      path: '/greet',
      headers: { 'content-type': 'application/json' },
      chunks: parts,
    });
    expect(res.status).toBe(200);
    const seen = JSON.parse(res.body) as Echoed;
    expect(Buffer.from(seen.body, 'base64').toString()).toBe('{"name":"Budi"}');
    expect(seen.headers['content-length']).toBe('15');
    expect(seen.headers['transfer-encoding']).toBeUndefined();
  });

  it('passes a body of another content type through unparsed', async () => {
    const binary = randomBytes(600);
    const { seen } = await echoed('/greet', {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: binary,
    });
    expect(Buffer.from(seen.body, 'base64').equals(binary)).toBe(true);
    expect(seen.headers['content-length']).toBe('600');

    const { seen: text } = await echoed('/greet', {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: '{ not json',
    });
    expect(Buffer.from(text.body, 'base64').toString()).toBe('{ not json');
  });

  it('keeps every body intact when requests queue for a saturated upstream pool', async () => {
    // The echo parks requests until the pool's 256 sockets are all busy, so the rest must wait
    // for a socket: the case where writing the body on `proxyReq` would lose it.
    echo.holdUntil(256);
    try {
      const bodies = Array.from({ length: 300 }, (_, i) => JSON.stringify({ name: `user-${i}` }));
      const answers = await Promise.all(
        bodies.map(async (body) => {
          const res = await fetch(`${gw.url}/greet`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body,
          });
          return { status: res.status, seen: (await res.json()) as Echoed };
        }),
      );
      answers.forEach(({ status, seen }, i) => {
        expect(status).toBe(200);
        expect(Buffer.from(seen.body, 'base64').toString()).toBe(bodies[i]);
      });
    } finally {
      echo.releaseAll();
    }
  });
});

describe('request ids', () => {
  it('generates one when absent, answers with it and forwards it', async () => {
    const { res, seen } = await echoed('/hello');
    const id = res.headers.get('x-request-id');
    expect(id).toMatch(UUID);
    expect(seen.headers['x-request-id']).toBe(id);
  });

  it('keeps a sane one', async () => {
    const { res, seen } = await echoed('/hello', { headers: { 'x-request-id': 'client-abc.123:9' } });
    expect(res.headers.get('x-request-id')).toBe('client-abc.123:9');
    expect(seen.headers['x-request-id']).toBe('client-abc.123:9');
  });

  it('replaces one that is not sane', async () => {
    const { res, seen } = await echoed('/hello', { headers: { 'x-request-id': 'bad id <script>' } });
    const id = res.headers.get('x-request-id');
    expect(id).toMatch(UUID);
    expect(seen.headers['x-request-id']).toBe(id);
  });

  it('is set on the gateway’s own answers too', async () => {
    const { res } = await call('/nope', { headers: { 'x-request-id': 'rid-404' } });
    expect(res.headers.get('x-request-id')).toBe('rid-404');
  });
});

describe('gateway answers', () => {
  it('404 for an unknown route', async () => {
    for (const path of ['/nope', '/hello/extra', '/posts', '/HELLO', '/posts/1/comments/2']) {
      const { res, json } = await call(path);
      expect(res.status).toBe(404);
      expect(json()).toEqual({ error: 'Not found' });
    }
  });

  it('405 with Allow for a known path and another method', async () => {
    const del = await call('/hello', { method: 'DELETE' });
    expect(del.res.status).toBe(405);
    expect(del.json()).toEqual({ error: 'Method not allowed' });
    expect(del.res.headers.get('allow')).toBe('GET, HEAD');

    const get = await call('/greet');
    expect(get.res.status).toBe(405);
    expect(get.res.headers.get('allow')).toBe('POST');
  });

  it('413 at once for a declared Content-Length over the limit', async () => {
    // 5000 bytes are announced and none are sent: the answer cannot wait for the body.
    const res = await rawRequest(gw.port, {
      method: 'POST',
      path: '/greet',
      headers: { 'content-type': 'application/json' },
      declaredLength: 5000,
    });
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body)).toEqual({ error: 'Payload too large' });
    expect(res.headers.connection).toBe('close');
  });

  it('413 for a chunked body that grows past the limit', async () => {
    const res = await rawRequest(gw.port, {
      method: 'POST',
      path: '/greet',
      headers: { 'content-type': 'application/octet-stream' },
      chunks: [Buffer.alloc(800, 1), Buffer.alloc(800, 2)],
    });
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body)).toEqual({ error: 'Payload too large' });
    expect(res.headers.connection).toBe('close');
  });

  it('a client still writing a body over the limit reads the 413, not a reset (lingering close)', async () => {
    // The client sends a first part, the gateway answers 413, and the client, slow to notice,
    // writes more before it reads. Closing the socket at once resets it under the client, and
    // the reset throws away the 413 waiting unread in its buffer (fetch reports EPIPE or
    // ECONNRESET); reading the rest of the body before closing lets every client see its 413.
    for (const [path, type, framing] of [
      ['/greet', 'application/json', 'length'],
      ['/greet', 'application/octet-stream', 'length'],
      ['/greet', 'application/json', 'chunked'],
      ['/greet', 'application/octet-stream', 'chunked'],
      ['/graphql', 'application/json', 'length'],
    ] as const) {
      const answer = await slowWriter(path, type, framing);
      expect([path, type, framing, answer.split('\r\n')[0]]).toEqual([path, type, framing, 'HTTP/1.1 413 Payload Too Large']);
      expect(answer).toMatch(/\r\nconnection: close\r\n/i);
      expect(answer.endsWith('{"error":"Payload too large"}')).toBe(true);
    }
    expect((await fetch(`${gw.url}/hello`)).status).toBe(200);
  });

  it('a refused body is read for a bounded time only: a client that never stops is cut off', async () => {
    const socket = connect(gw.port, '127.0.0.1');
    await once(socket, 'connect');
    socket.write('POST /greet HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 999999999\r\n\r\n');
    const received: Buffer[] = [];
    socket.on('data', (c: Buffer) => received.push(c));
    socket.on('error', () => undefined);
    // 20 MB, past the most the gateway discards (LINGER_BYTES), then the socket must close.
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    for (let sent = 0; sent < 20 * 1024 * 1024 && !socket.destroyed; sent += chunk.length) {
      if (!socket.write(chunk)) await Promise.race([once(socket, 'drain'), once(socket, 'close')]);
    }
    await until(() => socket.destroyed || socket.readableEnded, 5000);
    expect(Buffer.concat(received).toString('latin1')).toMatch(/^HTTP\/1\.1 413 /);
    socket.destroy();
  });

  it('accepts a body exactly at the limit', async () => {
    const body = Buffer.alloc(1024, 0x61);
    const { res, seen } = await echoed('/greet', { method: 'POST', headers: { 'content-type': 'text/plain' }, body });
    expect(res.status).toBe(200);
    expect(seen.bodyLength).toBe(1024);
  });

  it('400 for malformed JSON, without calling the service', async () => {
    const { res, json } = await call('/greet', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"name": ',
    });
    expect(res.status).toBe(400);
    expect(json()).toEqual({ error: 'Invalid JSON' });
    expect(res.headers.get('x-echo')).toBeNull();
  });

  it('/healthz and /readyz', async () => {
    const health = await call('/healthz');
    expect(health.res.status).toBe(200);
    expect(health.json()).toEqual({ status: 'ok' });
    const ready = await call('/readyz');
    expect(ready.res.status).toBe(200);
    expect(ready.json()).toMatchObject({ status: 'ready' });
  });
});

describe('access log', () => {
  it('writes one line per request with its id, and none for probes', async () => {
    const logger = createLogger('gateway', 'info');
    const info = jest.spyOn(logger, 'info').mockImplementation(() => undefined);
    const logged = await startGateway({ CONTENT_URL: echo.url, SUPERGRAPH_PATH: supergraph.path }, logger);
    try {
      await (await fetch(`${logged.url}/hello?secret=1`, { headers: { 'x-request-id': 'log-1' } })).text();
      await (await fetch(`${logged.url}/healthz`)).text();
      await (await fetch(`${logged.url}/nope`)).text();
      // The line is written when the response closes, which may trail the client's read by a tick.
      const lines = await until(() => {
        const found = info.mock.calls.filter((c) => c[1] === 'request').map((c) => c[0]);
        return found.length >= 2 ? found : null;
      });
      expect(lines).toEqual([
        expect.objectContaining({ requestId: 'log-1', method: 'GET', path: '/hello', status: 200 }),
        expect.objectContaining({ method: 'GET', path: '/nope', status: 404 }),
      ]);
    } finally {
      await logged.stop();
    }
  });
});

describe('upstream failures', () => {
  it('503 Service unavailable when the service refuses the connection (down or restarting)', async () => {
    const down = await startGateway({
      CONTENT_URL: `http://127.0.0.1:${await closedPort()}`,
      SUPERGRAPH_PATH: supergraph.path,
    });
    try {
      const get = await fetch(`${down.url}/hello`);
      expect(get.status).toBe(503);
      expect(await get.json()).toEqual({ error: 'Service unavailable' });
      const post = await fetch(`${down.url}/greet`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"name":"Budi"}',
      });
      expect(post.status).toBe(503);
      expect(await post.json()).toEqual({ error: 'Service unavailable' });
    } finally {
      await down.stop();
    }
  });

  it('504 when the service does not answer within UPSTREAM_TIMEOUT_MS', async () => {
    const slow = await startGateway({ CONTENT_URL: echo.url, SUPERGRAPH_PATH: supergraph.path, UPSTREAM_TIMEOUT_MS: '200' });
    try {
      const res = await fetch(`${slow.url}/hello`, { headers: { 'x-echo-delay': '5000' } });
      expect(res.status).toBe(504);
      expect(await res.json()).toEqual({ error: 'Gateway timeout' });
    } finally {
      await slow.stop();
    }
  });
});

describe('Cache-Control on every REST answer (docs/api/conventions.md)', () => {
  const cacheControl = async (path: string, init?: RequestInit) => {
    const { res } = await call(path, init);
    return { status: res.status, cacheControl: res.headers.get('cache-control') };
  };
  const bearer = { authorization: `Bearer ${signAccessToken({ sub: '2', name: 'A', role: 'user' }, TEST_JWT_SECRET, 300)}` };

  it('the gateway’s own errors are no-store: 401 (missing or invalid token), 404, 405, 400, 413', async () => {
    expect(await cacheControl('/profile')).toEqual({ status: 401, cacheControl: 'no-store' });
    expect(await cacheControl('/profile', { headers: { authorization: 'Bearer garbage' } })).toEqual({
      status: 401,
      cacheControl: 'no-store',
    });
    expect(await cacheControl('/nowhere')).toEqual({ status: 404, cacheControl: 'no-store' });
    expect(await cacheControl('/hello', { method: 'DELETE' })).toEqual({ status: 405, cacheControl: 'no-store' });
    expect(await cacheControl('/api/v9/hello')).toEqual({ status: 400, cacheControl: 'no-store' });
    const big = { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'x'.repeat(2048) }) };
    expect(await cacheControl('/greet', big)).toEqual({ status: 413, cacheControl: 'no-store' });
  });

  it('a service’s errors are no-store whatever it said, and so is an unreachable service', async () => {
    const headers = { 'x-echo-status': '500', 'x-echo-cache-control': 'public, max-age=60' };
    expect(await cacheControl('/hello', { headers })).toEqual({ status: 500, cacheControl: 'no-store' });
    const down = await startGateway({ CONTENT_URL: `http://127.0.0.1:${await closedPort()}`, SUPERGRAPH_PATH: supergraph.path });
    try {
      const res = await fetch(`${down.url}/hello`);
      expect([res.status, res.headers.get('cache-control')]).toEqual([503, 'no-store']);
    } finally {
      await down.stop();
    }
  });

  it('a service’s public answer keeps its policy; without one it is no-store', async () => {
    const headers = { 'x-echo-cache-control': 'public, max-age=60' };
    expect(await cacheControl('/hello', { headers })).toEqual({ status: 200, cacheControl: 'public, max-age=60' });
    expect(await cacheControl('/hello')).toEqual({ status: 200, cacheControl: 'no-store' });
  });

  it('an answer to a caller with credentials is never stored, even if the service says public', async () => {
    const headers = { 'x-echo-cache-control': 'public, max-age=60', ...bearer };
    expect(await cacheControl('/hello', { headers })).toEqual({ status: 200, cacheControl: 'no-store' });
    expect(await cacheControl('/profile', { headers })).toEqual({ status: 200, cacheControl: 'no-store' });
  });
});
