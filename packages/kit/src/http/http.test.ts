import express from 'express';
import request from 'supertest';
import { quietAccessLog } from '../logging/access-log';
import { conflict, notFound } from '../errors/errors';
import { REQUEST_ID_HEADER, errorHandler, healthCheck, jsonBody, notFoundHandler, requestContext, requestIdOf, route } from './http';
import { Lifecycle } from '../process/lifecycle';
import { createLogger } from '../logging/logger';
import { capturingLogger } from '../testing';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function buildApp(opts: { lifecycle?: Lifecycle; ready?: () => Promise<void> } = {}) {
  const { logger, lines } = capturingLogger();
  const lifecycle = opts.lifecycle ?? new Lifecycle(createLogger('kit-http-test', 'silent'));
  const app = express();
  app.use(healthCheck(lifecycle, opts.ready ?? (() => Promise.resolve())));
  app.use(requestContext(logger));
  app.use(jsonBody(100));
  const router = express.Router();
  route(router, '/items', {
    get: (req, res) => {
      res.json({ requestId: req.id });
    },
    post: (req, res) => {
      res.status(201).json({ got: req.body as unknown });
    },
  });
  route(router, '/only-post', { post: (_req, res) => void res.sendStatus(204) });
  route(router, '/poll', {
    get: (_req, res) => {
      quietAccessLog(res);
      res.sendStatus(304);
    },
  });
  route(router, '/conflict', {
    get: () => {
      throw conflict('Already reviewed', { status: 'processing' });
    },
  });
  route(router, '/async-missing', {
    get: async () => {
      await Promise.resolve();
      throw notFound('No such item');
    },
  });
  route(router, '/boom', {
    get: () => {
      throw new Error('db at 10.0.0.7 said password=hunter2');
    },
  });
  route(router, '/async-boom', {
    get: async () => {
      await Promise.resolve();
      throw new TypeError('cannot read properties of undefined');
    },
  });
  app.use(router);
  app.use(notFoundHandler);
  app.use(errorHandler());
  return { app, lines, lifecycle };
}

describe('requestContext', () => {
  const { app, lines } = buildApp();

  it('generates a request id when none is given, and exposes it on req and in the response', async () => {
    const res = await request(app).get('/items').expect(200);
    expect(res.headers['x-request-id']).toMatch(UUID);
    expect(res.body).toEqual({ requestId: res.headers['x-request-id'] });
  });

  it('generates a different id per request', async () => {
    const a = await request(app).get('/items');
    const b = await request(app).get('/items');
    expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
  });

  it.each(['abc-123', 'req_1.2:3', 'a'.repeat(128)])('keeps the sane id %p', async (id) => {
    const res = await request(app).get('/items').set('X-Request-Id', id).expect(200);
    expect(res.headers['x-request-id']).toBe(id);
    expect(res.body).toEqual({ requestId: id });
  });

  it.each([
    ['with spaces', 'has spaces in it'],
    ['500 characters long', 'a'.repeat(500)],
    ['129 characters long', 'a'.repeat(129)],
    ['with a log-injection attempt', 'x"}\\n{"level":60'],
    ['with a slash', 'a/b'],
  ])('replaces an id %s', async (_what, id) => {
    const res = await request(app).get('/items').set('X-Request-Id', id).expect(200);
    expect(res.headers['x-request-id']).toMatch(UUID);
    expect(res.body).toEqual({ requestId: res.headers['x-request-id'] });
  });

  it('writes one access-log line per request, with the request id', async () => {
    const res = await request(app).get('/items?x=1').set('X-Request-Id', 'log-line-test').expect(200);
    const access = lines.filter((l) => l.msg === 'request' && l.requestId === 'log-line-test');
    expect(access).toEqual([expect.objectContaining({ method: 'GET', url: '/items?x=1', status: 200 })]);
    expect(res.headers['x-request-id']).toBe('log-line-test');
  });

  it('a quiet answer (a poll that changed nothing) logs its access line at debug, not info', async () => {
    await request(app).get('/poll').set('X-Request-Id', 'quiet-poll').expect(304);
    await request(app).get('/items').set('X-Request-Id', 'loud-read').expect(200);
    expect(lines.filter((l) => l.requestId === 'quiet-poll')).toEqual([]);
    expect(lines.filter((l) => l.requestId === 'loud-read' && l.msg === 'request')).toHaveLength(1);
    const debug = capturingLogger('debug');
    const app2 = express();
    app2.use(requestContext(debug.logger));
    app2.get('/poll', (_req, res) => {
      quietAccessLog(res);
      res.sendStatus(304);
    });
    await request(app2).get('/poll').set('X-Request-Id', 'quiet-at-debug').expect(304);
    expect(debug.lines.filter((l) => l.requestId === 'quiet-at-debug')).toEqual([
      expect.objectContaining({ msg: 'request', status: 304, level: 20 }),
    ]);
  });

  it('requestIdOf reads the x-request-id header', () => {
    expect(REQUEST_ID_HEADER).toBe('x-request-id');
    expect(requestIdOf({ headers: { 'x-request-id': 'given-1' } } as never)).toBe('given-1');
    expect(requestIdOf({ headers: {} } as never)).toMatch(UUID);
  });
});

describe('jsonBody', () => {
  const { app } = buildApp();

  it('parses a JSON body', async () => {
    const res = await request(app).post('/items').send({ name: 'pear' }).expect(201);
    expect(res.body).toEqual({ got: { name: 'pear' } });
  });

  it('answers 400 Invalid JSON for a malformed body', async () => {
    const res = await request(app).post('/items').set('Content-Type', 'application/json').send('{"name": ').expect(400);
    expect(res.body).toEqual({ error: 'Invalid JSON' });
  });

  it('answers 400 Invalid JSON for bytes that are not UTF-8, and keeps real UTF-8 intact', async () => {
    // Raw bytes over a real socket (supertest would JSON-encode a Buffer).
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/items`;
    const post = (body: Buffer) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    try {
      const bad = await post(Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}')]));
      expect([bad.status, await bad.json()]).toEqual([400, { error: 'Invalid JSON' }]);
      const ok = await post(Buffer.from('{"name":"Sí 🍐"}'));
      expect([ok.status, await ok.json()]).toEqual([201, { got: { name: 'Sí 🍐' } }]);
    } finally {
      server.close();
    }
  });

  it('accepts a body of exactly the limit', async () => {
    const body = JSON.stringify({ a: 'x'.repeat(92) });
    expect(Buffer.byteLength(body)).toBe(100);
    await request(app).post('/items').set('Content-Type', 'application/json').send(body).expect(201);
  });

  it('answers 413 Payload too large for a body over the limit', async () => {
    const body = JSON.stringify({ a: 'x'.repeat(93) });
    expect(Buffer.byteLength(body)).toBe(101);
    const res = await request(app).post('/items').set('Content-Type', 'application/json').send(body).expect(413);
    expect(res.body).toEqual({ error: 'Payload too large' });
  });

  it('answers 400 for an unsupported content encoding', async () => {
    const res = await request(app)
      .post('/items')
      .set('Content-Type', 'application/json')
      .set('Content-Encoding', 'bogus')
      .send('{}')
      .expect(400);
    expect(res.body).toEqual({ error: 'Unsupported content encoding' });
  });
});

describe('route', () => {
  const { app } = buildApp();

  it('answers 405 with Allow for a method the path does not take', async () => {
    const res = await request(app).delete('/items').expect(405);
    expect(res.headers.allow).toBe('GET, POST, HEAD');
    expect(res.body).toEqual({ error: 'Method not allowed' });
    const put = await request(app).put('/only-post').expect(405);
    expect(put.headers.allow).toBe('POST');
  });

  it('serves HEAD wherever GET is served', async () => {
    await request(app).head('/items').expect(200);
    await request(app).head('/only-post').expect(405);
  });

  it('answers 404 Not found for an unknown path', async () => {
    const res = await request(app).get('/nowhere').expect(404);
    expect(res.body).toEqual({ error: 'Not found' });
    await request(app).post('/nowhere').send({}).expect(404);
  });
});

describe('errorHandler', () => {
  const { app, lines } = buildApp();

  it('maps a thrown HaloError to its status and body, extra members included', async () => {
    const res = await request(app).get('/conflict').expect(409);
    expect(res.body).toEqual({ error: 'Already reviewed', status: 'processing' });
  });

  it('maps a HaloError from an async handler too', async () => {
    const res = await request(app).get('/async-missing').expect(404);
    expect(res.body).toEqual({ error: 'No such item' });
  });

  it.each(['/boom', '/async-boom'])('turns an unexpected error from %s into a bare 500, logged with the request id', async (path) => {
    const res = await request(app)
      .get(path)
      .set('X-Request-Id', `err-${path.slice(1)}`)
      .expect(500);
    expect(res.body).toEqual({ error: 'Internal server error' });
    expect(res.text).not.toMatch(/hunter2|stack|cannot read|at .*\.ts/);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(lines).toContainEqual(
      expect.objectContaining({ level: 50, msg: 'request failed', requestId: `err-${path.slice(1)}`, err: expect.anything() }),
    );
  });

  it('does not log a 4xx as a failure', async () => {
    await request(app).get('/conflict').set('X-Request-Id', 'conflict-no-error-log').expect(409);
    expect(lines.filter((l) => l.requestId === 'conflict-no-error-log' && l.level === 50)).toEqual([]);
  });
});

describe('healthCheck', () => {
  it('answers /healthz with 200 whatever the dependencies say', async () => {
    const { app } = buildApp({ ready: () => Promise.reject(new Error('db down')) });
    const res = await request(app).get('/healthz').expect(200);
    expect(res.body).toEqual({ status: 'ok' });
    await request(app).get('/healthz?probe=k8s').expect(200);
  });

  it('answers /readyz with 200 when the readiness check resolves', async () => {
    let calls = 0;
    const { app } = buildApp({
      ready: async () => {
        calls++;
      },
    });
    const res = await request(app).get('/readyz').expect(200);
    expect(res.body).toEqual({ status: 'ready' });
    expect(calls).toBe(1);
  });

  it('answers /readyz with 503 when the readiness check rejects', async () => {
    const { app } = buildApp({ ready: () => Promise.reject(new Error('ECONNREFUSED')) });
    const res = await request(app).get('/readyz').expect(503);
    expect(res.body).toEqual({ status: 'unavailable' });
    expect(res.text).not.toContain('ECONNREFUSED');
  });

  it('answers /readyz with 503 once shutdown has started, without running the check', async () => {
    let calls = 0;
    const lifecycle = new Lifecycle(createLogger('kit-http-test', 'silent'));
    let release!: () => void;
    lifecycle.register('slow resource', () => new Promise<void>((r) => (release = r)));
    const { app } = buildApp({
      lifecycle,
      ready: async () => {
        calls++;
      },
    });
    await request(app).get('/readyz').expect(200);
    const stopping = lifecycle.shutdown(5_000);
    const res = await request(app).get('/readyz').expect(503);
    expect(res.body).toEqual({ status: 'shutting down' });
    expect(calls).toBe(1);
    // Liveness stays up while draining.
    await request(app).get('/healthz').expect(200);
    release();
    await stopping;
  });

  it('leaves other paths to the app', async () => {
    const { app } = buildApp();
    await request(app).get('/items').expect(200);
    await request(app).get('/healthzz').expect(404);
  });
});
