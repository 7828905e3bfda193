import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { CONNECTIONS_CHECKING, guardHttpServer } from './http-server';
import { listen } from '../process/lifecycle';

/**
 * Slow and broken clients against a real node:http server guarded like every Halo server: raw TCP
 * clients that dribble their headers or body get a contract 408 within the timeouts (checked every
 * second), garbage gets a contract 400, and neither an idle keep-alive connection nor a slow
 * answer is ever cut.
 */
let server: Server;
let port: number;

beforeAll(async () => {
  server = createServer(CONNECTIONS_CHECKING, (req, res) => {
    req.resume();
    req.on('end', () => {
      const wait = req.url === '/slow-answer' ? 1_500 : 0;
      setTimeout(() => res.end('{"ok":true}'), wait);
    });
  });
  guardHttpServer(server, { headersTimeoutMs: 300, requestTimeoutMs: 1_000 });
  port = await listen(server, 0, '127.0.0.1');
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

/** Opens a raw connection, runs `talk` with a writer, and resolves with all it received and how long it took. */
function raw(talk: (write: (s: string) => void) => void): Promise<{ text: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve({ text, ms: Date.now() - started }));
    socket.on('connect', () => talk((s) => !socket.destroyed && socket.write(s)));
    setTimeout(() => socket.destroy(), 8_000).unref();
  });
}

const statusOf = (text: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
const bodyOf = (text: string) => text.slice(text.indexOf('\r\n\r\n') + 4);

it('headers dribbled past the headers timeout: 408 {"error":"Request timeout"}, no-store, connection closed', async () => {
  const { text, ms } = await raw((write) => {
    write('GET / HTTP/1.1\r\nHost: x\r\n');
    const t = setInterval(() => write('X-Slow: 1\r\n'), 100);
    setTimeout(() => clearInterval(t), 5_000).unref();
  });
  expect(statusOf(text)).toBe(408);
  expect(JSON.parse(bodyOf(text))).toEqual({ error: 'Request timeout' });
  expect(text.toLowerCase()).toContain('cache-control: no-store');
  expect(ms).toBeLessThan(3_000);
});

it('a body dribbled past the request timeout: 408 as a contract error', async () => {
  const { text } = await raw((write) => {
    write('POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n');
    const t = setInterval(() => write(' '), 100);
    setTimeout(() => clearInterval(t), 5_000).unref();
  });
  expect(statusOf(text)).toBe(408);
  expect(JSON.parse(bodyOf(text))).toEqual({ error: 'Request timeout' });
});

it('a request node cannot parse: 400 {"error":"Bad request"}', async () => {
  const { text } = await raw((write) => write('NOT HTTP AT ALL\r\n\r\n'));
  expect(statusOf(text)).toBe(400);
  expect(JSON.parse(bodyOf(text))).toEqual({ error: 'Bad request' });
});

it('an idle keep-alive connection is not timed out between requests, and a slow answer is never cut', async () => {
  const { text } = await raw((write) => {
    write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    // Idle for longer than both timeouts, then a request whose answer takes longer than them too.
    setTimeout(() => write('GET /slow-answer HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'), 1_500);
  });
  const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));
  expect(statuses).toEqual([200, 200]);
});
