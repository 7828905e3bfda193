import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { AnswerHeaders, createHttpFetcher } from '../src/graphql/http-fetcher';

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
