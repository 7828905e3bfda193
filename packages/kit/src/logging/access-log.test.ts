import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { logRequest, quietAccessLog, type AccessLogTarget } from './access-log';
import { createLogger, type Logger } from './logger';
import { bindRequestContext } from './request-context';

/**
 * The access log writes its common line itself rather than through pino's generic field walk:
 * what a log pipeline reads must not change by a byte. Each line here is compared with the line
 * pino writes for the same fields on the same logger (the time field aside: it is the clock's).
 */
function capture(level = 'info'): { logger: Logger; raw: string[] } {
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      raw.push(chunk.toString());
      done();
    },
  });
  return { logger: createLogger('edge', level, stream), raw };
}

const untimed = (line: string) => line.replace(/"time":"[^"]*"/, '"time":"T"');

interface Served {
  server: Server;
  url: string;
}

async function serve(
  logger: Logger,
  key: AccessLogTarget,
  answer: (req: IncomingMessage, res: ServerResponse) => void,
  requestId: string | null = 'req-1',
  /** What the line names (as the caller passes it: the gateway its path, a service its url). */
  target?: string,
): Promise<Served> {
  const server = createServer((req, res) => {
    if (requestId !== null) bindRequestContext(req, { requestId });
    logRequest(logger, req, res, key, target ?? (key === 'path' ? req.url!.split('?')[0]! : req.url!));
    answer(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** A request, answered; or abandoned once the first bytes of its answer arrive. */
function send(url: string, path: string, abandon = false): Promise<void> {
  if (abandon) {
    const { port } = new URL(url);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`));
      socket.once('data', () => socket.destroy());
      socket.on('close', () => resolve());
      socket.on('error', reject);
    });
  }
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method: 'GET' }, (res) => {
      res.resume();
      res.on('end', resolve);
    });
    req.on('error', reject);
    req.end();
  });
}

const waitFor = async (cond: () => boolean) => {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
};

/** What pino itself writes for these fields through the access logger (the same logger's child without redaction). */
function pinoLine(logger: Logger, raw: string[], fields: Record<string, unknown>): string {
  const before = raw.length;
  logger.child({}, { redact: [] }).info(fields, 'request');
  expect(raw).toHaveLength(before + 1);
  return raw[before]!;
}

describe('access log lines', () => {
  const servers: Server[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  });

  it.each([
    ['path', '/posts/2?token=secret', 'path'],
    ['url', '/posts/2?page=1', 'url'],
    ['path', '/a"b/\u2713/\\\u0001\u2028', 'a target that needs escaping'],
  ] as const)('a %s line equals what pino writes (%s)', async (key, path) => {
    const { logger, raw } = capture();
    const odd = path.includes('"');
    const { server, url } = await serve(logger, key, (_req, res) => res.end('ok'), 'id-"1"\u2028', odd ? path : undefined);
    servers.push(server);
    await send(url, odd ? '/odd' : path);
    await waitFor(() => raw.length === 1);
    expect(raw).toHaveLength(1);
    const line = JSON.parse(raw[0]!) as Record<string, unknown>;
    const target = key === 'path' ? path.split('?')[0] : path;
    expect(line).toMatchObject({
      level: 30,
      service: 'edge',
      name: 'edge',
      requestId: 'id-"1"\u2028',
      method: 'GET',
      status: 200,
      msg: 'request',
    });
    expect(line[key]).toBe(target);
    // The query string (a credential here) never reaches the gateway's line.
    if (key === 'path') expect(raw[0]).not.toContain('secret');
    const fields = { requestId: 'id-"1"\u2028', method: 'GET', [key]: target, status: 200, ms: line.ms };
    expect(untimed(raw[0]!)).toBe(untimed(pinoLine(logger, raw, fields)));
  });

  it('marks a response the client abandoned, as pino would', async () => {
    const { logger, raw } = capture();
    const { server, url } = await serve(logger, 'path', (_req, res) => {
      res.writeHead(200);
      res.write('partial');
    });
    servers.push(server);
    await send(url, '/slow', true);
    await waitFor(() => raw.length === 1);
    const line = JSON.parse(raw[0]!) as Record<string, unknown>;
    expect(line.aborted).toBe(true);
    const fields = { requestId: 'req-1', method: 'GET', path: '/slow', status: 200, ms: line.ms, aborted: true };
    expect(untimed(raw[0]!)).toBe(untimed(pinoLine(logger, raw, fields)));
  });

  it('keeps a quiet answer at debug, and writes nothing at info', async () => {
    const quietAtInfo = capture('info');
    const a = await serve(quietAtInfo.logger, 'url', (_req, res) => {
      quietAccessLog(res);
      res.end();
    });
    const atDebug = capture('debug');
    const b = await serve(atDebug.logger, 'url', (_req, res) => {
      quietAccessLog(res);
      res.end();
    });
    servers.push(a.server, b.server);
    await send(a.url, '/poll');
    await send(b.url, '/poll');
    await waitFor(() => atDebug.raw.length === 1);
    expect(quietAtInfo.raw).toEqual([]);
    expect(JSON.parse(atDebug.raw[0]!)).toMatchObject({ level: 20, url: '/poll', msg: 'request' });
  });

  it('logs through any pino logger, and without a request id', async () => {
    const raw: string[] = [];
    const plain = pino({ base: null }, { write: (s: string) => raw.push(s) });
    const { server, url } = await serve(plain, 'path', (_req, res) => res.end(), null);
    servers.push(server);
    await send(url, '/x');
    await waitFor(() => raw.length === 1);
    const line = JSON.parse(raw[0]!) as Record<string, unknown>;
    expect(line).toMatchObject({ level: 30, method: 'GET', path: '/x', status: 200, msg: 'request' });
    expect(line).not.toHaveProperty('requestId');
  });
});
