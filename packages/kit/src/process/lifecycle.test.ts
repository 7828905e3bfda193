import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import http, { type Server } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { createLogger, type Logger } from '../logging/logger';
import { Lifecycle, closeHttpServer, listen } from './lifecycle';

const silent = createLogger('kit-lifecycle-test', 'silent');

/** A logger whose warn calls are recorded (the rest is silent). */
function warnSpy(): { logger: Logger; warned: unknown[] } {
  const warned: unknown[] = [];
  const logger = Object.assign(Object.create(silent) as Logger, {
    warn: (obj: unknown) => {
      warned.push(obj);
    },
  });
  return { logger, warned };
}

describe('Lifecycle', () => {
  it('closes resources in reverse order of registration', async () => {
    const life = new Lifecycle(silent);
    const order: string[] = [];
    life.register('db', () => {
      order.push('db');
    });
    life.register('redis', async () => {
      await new Promise((r) => setImmediate(r));
      order.push('redis');
    });
    life.register('http', () => {
      order.push('http');
    });
    await life.shutdown(1_000);
    expect(order).toEqual(['http', 'redis', 'db']);
  });

  it('stops accepting as soon as shutdown begins', async () => {
    const life = new Lifecycle(silent);
    const seen: boolean[] = [];
    life.register('probe', () => {
      seen.push(life.accepting);
    });
    expect(life.accepting).toBe(true);
    const done = life.shutdown(1_000);
    expect(life.accepting).toBe(false);
    await done;
    expect(seen).toEqual([false]);
  });

  it('runs shutdown once, however often it is asked', async () => {
    const life = new Lifecycle(silent);
    let closes = 0;
    life.register('once', () => {
      closes++;
    });
    const a = life.shutdown(1_000);
    const b = life.shutdown(1_000);
    expect(b).toBe(a);
    await Promise.all([a, b, life.shutdown(5)]);
    expect(closes).toBe(1);
  });

  it('does not let a hanging closer block the others, and logs it', async () => {
    const { logger, warned } = warnSpy();
    const life = new Lifecycle(logger);
    const closed: string[] = [];
    life.register('pool', () => {
      closed.push('pool');
    });
    life.register('stuck', () => new Promise<void>(() => undefined)); // never settles
    life.register('server', () => {
      closed.push('server');
    });
    await life.shutdown(200);
    expect(closed).toEqual(['server', 'pool']);
    expect(warned).toEqual([expect.objectContaining({ resource: 'stuck' })]);
  });

  it('keeps going when a closer throws or rejects', async () => {
    const { logger, warned } = warnSpy();
    const life = new Lifecycle(logger);
    const closed: string[] = [];
    life.register('first', () => {
      closed.push('first');
    });
    life.register('rejects', () => Promise.reject(new Error('nope')));
    life.register('throws', () => {
      throw new Error('sync nope');
    });
    await life.shutdown(1_000);
    expect(closed).toEqual(['first']);
    expect(warned.map((w) => (w as { resource: string }).resource)).toEqual(['throws', 'rejects']);
  });
});

describe('closeHttpServer', () => {
  let server: Server | undefined;

  afterEach(() => {
    server?.closeAllConnections();
    server?.close();
    server = undefined;
  });

  it('lets an in-flight request finish, then closes (also with a keep-alive client)', async () => {
    let entered!: () => void;
    const inHandler = new Promise<void>((r) => (entered = r));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    server = http.createServer((_req, res) => {
      entered();
      void released.then(() => res.end('finished'));
    });
    // As in serveHttp: idle keep-alive sockets would otherwise hold the drain for a minute.
    server.keepAliveTimeout = 65_000;
    const port = await listen(server, 0, '127.0.0.1');
    expect(port).toBe((server.address() as AddressInfo).port);

    const agent = new http.Agent({ keepAlive: true });
    const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        })
        .on('error', reject);
    });
    await inHandler;

    let closed = false;
    // A grace period far longer than the test timeout: only a clean drain can finish in time.
    const closing = closeHttpServer(server, 120_000).then(() => (closed = true));
    await new Promise((r) => setImmediate(r));
    expect(closed).toBe(false);
    expect(server.listening).toBe(false);

    release();
    await expect(response).resolves.toEqual({ status: 200, body: 'finished' });
    await closing;
    expect(closed).toBe(true);
    agent.destroy();
  }, 10_000);

  it('tells a keep-alive client that keeps sending requests during the drain to close', async () => {
    let slowEntered!: () => void;
    const slowInHandler = new Promise<void>((r) => (slowEntered = r));
    let fastEntered!: () => void;
    const fastInHandler = new Promise<void>((r) => (fastEntered = r));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    server = http.createServer((req, res) => {
      if (req.url === '/slow') {
        slowEntered();
        void released.then(() => res.end('slow'));
      } else {
        fastEntered();
        res.end('fast'); // answers synchronously, like a health check
      }
    });
    server.keepAliveTimeout = 65_000;
    const port = await listen(server, 0, '127.0.0.1');

    // One raw connection, so the second request provably travels on the kept-alive socket.
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    const socketClosed = new Promise<void>((r) => socket.on('close', () => r()));
    socket.write('GET /slow HTTP/1.1\r\nHost: test\r\n\r\n');
    await slowInHandler;

    const closing = closeHttpServer(server, 120_000);
    socket.write('GET /fast HTTP/1.1\r\nHost: test\r\n\r\n');
    await fastInHandler;
    release();

    await socketClosed; // the server closed the connection after answering both
    await closing;
    const responses = received.split(/(?=HTTP\/1\.1 )/);
    expect(responses).toHaveLength(2);
    expect(responses[0]).toMatch(/^HTTP\/1\.1 200[\s\S]*slow$/);
    expect(responses[1]).toMatch(/^HTTP\/1\.1 200[\s\S]*\r\nConnection: close\r\n[\s\S]*fast$/i);
  }, 10_000);

  it('refuses new connections once closing has begun', async () => {
    server = http.createServer((_req, res) => res.end('ok'));
    const port = await listen(server, 0, '127.0.0.1');
    await closeHttpServer(server, 1_000);
    await expect(
      new Promise((resolve, reject) => http.get({ host: '127.0.0.1', port, path: '/' }, resolve).on('error', reject)),
    ).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('closes idle keep-alive connections at once', async () => {
    server = http.createServer((_req, res) => res.end('ok'));
    const port = await listen(server, 0, '127.0.0.1');
    const agent = new http.Agent({ keepAlive: true });
    const socket = await new Promise<import('node:net').Socket>((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(req.socket!));
      });
      req.on('error', reject);
    });
    const closedByServer = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    // The socket now sits idle in the agent, open; a long grace period proves it is not waited for
    // (were it, this test would time out), and the server closes it.
    expect(socket.destroyed).toBe(false);
    await closeHttpServer(server, 120_000);
    await closedByServer;
    expect(socket.destroyed).toBe(true);
    agent.destroy();
  });

  it('force-closes a request that outlives the grace period', async () => {
    let entered!: () => void;
    const inHandler = new Promise<void>((r) => (entered = r));
    server = http.createServer(() => entered()); // never answers
    const port = await listen(server, 0, '127.0.0.1');
    const failed = new Promise<unknown>((resolve) =>
      http.get({ host: '127.0.0.1', port, path: '/' }, () => resolve('answered')).on('error', resolve),
    );
    await inHandler;
    await closeHttpServer(server, 100);
    await expect(failed).resolves.toMatchObject({ code: 'ECONNRESET' });
  });
});

describe('listen', () => {
  it('rejects when the port is taken', async () => {
    const first = http.createServer();
    const port = await listen(first, 0, '127.0.0.1');
    const second = http.createServer();
    try {
      await expect(listen(second, port, '127.0.0.1')).rejects.toMatchObject({ code: 'EADDRINUSE' });
    } finally {
      first.close();
    }
  });
});

describe('installSignalHandlers (in a real child process, built kit)', () => {
  const dist = resolve(__dirname, '../../dist');
  // A process whose only resource takes `closeMs` to close; it prints "closed" when it did.
  const script = (closeMs: number) => `
    const { Lifecycle } = require(${JSON.stringify(dist)} + '/process/lifecycle.js');
    const { createLogger } = require(${JSON.stringify(dist)} + '/logging/logger.js');
    const lc = new Lifecycle(createLogger('t', 'silent'));
    const keepAlive = setInterval(() => {}, 1000);
    lc.register('slow', () => new Promise((r) => setTimeout(() => { clearInterval(keepAlive); console.log('closed'); r(); }, ${closeMs})));
    lc.installSignalHandlers(5000);
    console.log('ready');`;

  function run(closeMs: number) {
    const child = spawn(process.execPath, ['-e', script(closeMs)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    const ready = new Promise<void>((ok) =>
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('ready')) ok();
      }),
    );
    const exited = new Promise<number | null>((ok) => child.once('exit', (code) => ok(code)));
    return { child, ready, exited, output: () => out };
  }

  it('a duplicate signal at the same moment (Ctrl+C under npm start) does not cut the drain', async () => {
    const p = run(300);
    await p.ready;
    p.child.kill('SIGINT');
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
    expect(p.output()).toContain('closed');
  });

  it('a second signal a second or more later exits at once', async () => {
    const p = run(4000);
    await p.ready;
    p.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1200));
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(1);
    expect(p.output()).not.toContain('closed');
  });
});
