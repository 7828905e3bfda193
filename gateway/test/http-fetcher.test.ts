import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { AnswerHeaders, createHttpFetcher, isQueryBody } from '../src/graphql/http-fetcher';

/** The subgraph fetcher against a real local HTTP server: what Apollo reads of an answer. */
describe('createHttpFetcher', () => {
  let server: Server;
  let base: string;
  const seen: { method: string; url: string; headers: IncomingMessage['headers']; body: string; socket: unknown }[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        seen.push({ method: req.method!, url: req.url!, headers: req.headers, body, socket: req.socket });
        if (req.url === '/fail') {
          res.writeHead(503, 'Busy', { 'content-type': 'application/json' });
          return void res.end('{"error":"busy"}');
        }
        res.writeHead(200, [
          ['Content-Type', 'application/json'],
          ['Cache-Control', 'public, max-age=30'],
          ['Set-Cookie', 'a=1'],
          ['Set-Cookie', 'b=2'],
        ]);
        res.end(JSON.stringify({ data: { echo: body, ü: 'ü'.repeat(40_000) } }));
      });
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((ok) => server.close(ok));
  });
  beforeEach(() => (seen.length = 0));

  it('sends the method, headers and body, and answers status, headers and the whole body (multi-chunk UTF-8)', async () => {
    const fetcher = createHttpFetcher();
    const res = await fetcher(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer t' },
      body: '{"q":"é"}',
    });
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/graphql', body: '{"q":"é"}' });
    expect(seen[0]!.headers).toMatchObject({ authorization: 'Bearer t', 'content-length': String(Buffer.byteLength('{"q":"é"}')) });
    expect(res.status).toBe(200);
    expect(res.ok).toBe(true);
    expect(res.headers.get('cache-control')).toBe('public, max-age=30');
    expect(res.headers.get('content-type')).toBe('application/json');
    const json = (await res.json()) as { data: { echo: string; ü: string } };
    expect(json.data.echo).toBe('{"q":"é"}');
    expect(json.data.ü).toBe('ü'.repeat(40_000));
    expect(res.bodyUsed).toBe(true);
    await expect(res.text()).rejects.toThrow(/already been read/);
  });

  it('keeps connections alive: ten requests in sequence share at most two connections', async () => {
    // undici's pool may open a second connection while the first is being handed back, never more in sequence.
    const fetcher = createHttpFetcher();
    for (let i = 0; i < 10; i++) await (await fetcher(`${base}/graphql`, { method: 'POST', body: '{}' })).text();
    expect(seen).toHaveLength(10);
    expect(new Set(seen.map((s) => s.socket)).size).toBeLessThanOrEqual(2);
  });

  it('close() ends its keep-alive connections once the answers are in, and later fetches fail', async () => {
    const fetcher = createHttpFetcher();
    const answers = await Promise.all([1, 2, 3].map(() => fetcher(`${base}/graphql`, { method: 'POST', body: '{}' })));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    // The server's side of this fetcher's connections (earlier tests' fetchers keep theirs).
    const sockets = [...new Set(seen.map((s) => s.socket as Socket))];
    const open = () => sockets.filter((socket) => !socket.destroyed).length;
    expect(open()).toBeGreaterThan(0);
    await fetcher.close();
    for (let i = 0; i < 50 && open() > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(open()).toBe(0);
    const err = (await fetcher(`${base}/graphql`, { method: 'POST', body: '{}' }).catch((e: unknown) => e)) as TypeError;
    expect(err).toBeInstanceOf(TypeError);
    expect(err.message).toBe('fetch failed');
  });

  it('hands an error status to the caller as a response, not a rejection', async () => {
    const res = await createHttpFetcher()(`${base}/fail`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(503);
    expect(res.statusText).toBe('Busy');
    expect(res.ok).toBe(false);
    expect(await res.text()).toBe('{"error":"busy"}');
  });

  it('rejects like fetch when nobody answers: a TypeError whose cause carries the socket error code', async () => {
    const closed = createServer();
    await new Promise<void>((ok) => closed.listen(0, '127.0.0.1', ok));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((ok) => closed.close(ok));
    const err = (await createHttpFetcher()(`http://127.0.0.1:${port}/graphql`, { method: 'POST', body: '{}' }).catch(
      (e: unknown) => e,
    )) as TypeError & { cause?: { code?: string } };
    expect(err).toBeInstanceOf(TypeError);
    expect(err.cause?.code).toBe('ECONNREFUSED');
  });
});

/** A subgraph answer's headers read as Apollo and the edge read them: as fetch's own Headers would show them. */
describe('AnswerHeaders', () => {
  const raw: [string, string][] = [
    ['Content-Type', 'application/json'],
    ['X-Served-By', 'a'],
    ['cache-control', 'max-age=5'],
    ['x-served-by', 'b'],
    ['Age', '3'],
  ];

  it('answers get, has and iteration as WHATWG Headers does over the same raw headers', () => {
    const ours = new AnswerHeaders(raw);
    const theirs = new Headers(raw);
    for (const name of ['content-type', 'CONTENT-TYPE', 'x-served-by', 'Cache-Control', 'age', 'etag']) {
      expect(ours.get(name)).toBe(theirs.get(name));
      expect(ours.has(name)).toBe(theirs.has(name));
    }
    expect([...ours]).toEqual([...theirs]);
    expect([...ours.keys()]).toEqual([...theirs.keys()]);
    expect([...ours.values()]).toEqual([...theirs.values()]);
  });

  it('changes like WHATWG Headers: set replaces, append joins, delete removes, whatever the case', () => {
    const ours = new AnswerHeaders(raw);
    const theirs = new Headers(raw);
    for (const h of [ours, theirs]) {
      h.set('CONTENT-TYPE', 'text/plain');
      h.append('Age', '4');
      h.delete('X-SERVED-BY');
    }
    expect([...ours.entries()]).toEqual([...theirs.entries()]);
  });
});

/**
 * A subgraph pod draining in a rolling update closes its kept-alive connections; a request the
 * gateway sent on one just then gets no answer. The server here does that on purpose: it answers
 * the first request of each connection and drops the connection at the second.
 */
describe('createHttpFetcher when a kept-alive connection is closed under a request', () => {
  let server: Server;
  let base: string;
  const sockets: unknown[] = [];
  let received = 0;

  beforeAll(async () => {
    const served = new WeakMap<object, number>();
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        received++;
        const n = (served.get(req.socket) ?? 0) + 1;
        served.set(req.socket, n);
        if (!sockets.includes(req.socket)) sockets.push(req.socket);
        if (n > 1) return void req.socket.destroy();
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"data":{"ok":true}}');
      });
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((ok) => server.close(ok));
  });
  beforeEach(() => {
    sockets.length = 0;
    received = 0;
  });

  const post = (fetcher: ReturnType<typeof createHttpFetcher>, query: string) =>
    fetcher(base, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables: {} }) });

  it('sends a query again on another connection: the client gets its answer', async () => {
    // One connection, so the second request surely goes out on the first one's.
    const fetcher = createHttpFetcher({ maxSockets: 1 });
    try {
      expect((await post(fetcher, 'query Q__catalog__0 { products { id } }')).status).toBe(200);
      const again = await post(fetcher, 'query Q__catalog__0 { products { id } }');
      expect(again.status).toBe(200);
      expect(await again.json()).toEqual({ data: { ok: true } });
      expect({ received, connections: sockets.length }).toEqual({ received: 3, connections: 2 });
    } finally {
      await fetcher.close();
    }
  });

  it('sends it again on a new connection when every kept-alive one is closing (a pod draining)', async () => {
    const fetcher = createHttpFetcher({ maxSockets: 3 });
    try {
      // Three at once: three connections, each with one answer given (the next one on each is dropped).
      const warm = await Promise.all([1, 2, 3].map(() => post(fetcher, '{ products { id } }')));
      expect(warm.map((r) => r.status)).toEqual([200, 200, 200]);
      const again = await post(fetcher, 'query Q__catalog__0 { products { id } }');
      expect(again.status).toBe(200);
      // Sent on a kept-alive connection (dropped), then on a new one; not on another kept-alive one.
      expect({ received, connections: sockets.length }).toEqual({ received: 5, connections: 4 });
    } finally {
      await fetcher.close();
    }
  });

  it('never sends a mutation twice: it may have run, so the failure is the answer', async () => {
    // One connection, so the second request surely goes out on the first one's.
    const fetcher = createHttpFetcher({ maxSockets: 1 });
    try {
      expect((await post(fetcher, '{ products { id } }')).status).toBe(200);
      await expect(post(fetcher, 'mutation M__payments__0 { pay { id } }')).rejects.toThrow('fetch failed');
      expect({ received, connections: sockets.length }).toEqual({ received: 2, connections: 1 });
    } finally {
      await fetcher.close();
    }
  });
});

describe('isQueryBody', () => {
  it('tells a query (named, anonymous, after whitespace) from a mutation or a subscription, as SubgraphDataSource writes them', () => {
    const body = (query: string) => JSON.stringify({ query, variables: { query: 'mutation' } });
    expect(isQueryBody(body('query Q__catalog__0($id: ID!) { product(id: $id) { name } }'))).toBe(true);
    expect(isQueryBody(body('{ products { id } }'))).toBe(true);
    expect(isQueryBody(body('\n  query Q { a }'))).toBe(true);
    expect(isQueryBody(body('mutation M__payments__0 { pay { id } }'))).toBe(false);
    expect(isQueryBody(body('subscription S { newMessage { id } }'))).toBe(false);
    expect(isQueryBody(JSON.stringify({ variables: { query: 'query' }, query: 'mutation M { a }' }))).toBe(false);
    expect(isQueryBody(undefined)).toBe(false);
  });
});
