import { createServer, type Server } from 'node:http';
import { freePort } from '@halo/kit/launch';
import { listenLazily, type LazyPort } from './lazy-port';

/** The server behind the port: an HTTP server on a port of its own, answering who it is. */
function backend(): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'text/plain');
    res.end(`backend saw ${req.method} ${req.url} for ${req.headers.host}`);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as { port: number }).port })),
  );
}

let lazy: LazyPort | undefined;
const servers: Server[] = [];

afterEach(async () => {
  await lazy?.close();
  lazy = undefined;
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

it('starts the server behind the port on the first connection only, and relays every request to it', async () => {
  const port = await freePort();
  let starts = 0;
  lazy = await listenLazily('127.0.0.1', port, async () => {
    starts++;
    const b = await backend();
    servers.push(b.server);
    return b.port;
  });
  expect(starts).toBe(0);
  expect(lazy.started).toBe(false);

  // Several at once, before the backend exists: one start, every one answered.
  const answers = await Promise.all(
    [1, 2, 3].map(async (i) => (await fetch(`http://127.0.0.1:${port}/x/${i}`, { headers: { connection: 'close' } })).text()),
  );
  expect(answers).toEqual([1, 2, 3].map((i) => `backend saw GET /x/${i} for 127.0.0.1:${port}`));
  const later = await fetch(`http://127.0.0.1:${port}/later`, { method: 'POST', body: 'hello' });
  expect(await later.text()).toBe(`backend saw POST /later for 127.0.0.1:${port}`);
  expect(starts).toBe(1);
  expect(lazy.started).toBe(true);
});

it('closes the connections of a failed start, and the next connection tries again', async () => {
  const port = await freePort();
  const errors: string[] = [];
  let attempt = 0;
  lazy = await listenLazily(
    '127.0.0.1',
    port,
    async () => {
      if (++attempt === 1) throw new Error('no luck');
      const b = await backend();
      servers.push(b.server);
      return b.port;
    },
    (err) => errors.push((err as Error).message),
  );
  await expect(fetch(`http://127.0.0.1:${port}/`)).rejects.toThrow();
  expect(errors).toEqual(['no luck']);
  expect(await (await fetch(`http://127.0.0.1:${port}/again`)).text()).toBe(`backend saw GET /again for 127.0.0.1:${port}`);
  expect(attempt).toBe(2);
});

it('refuses connections once closed', async () => {
  const port = await freePort();
  lazy = await listenLazily('127.0.0.1', port, () => Promise.reject(new Error('never used')));
  await lazy.close();
  lazy = undefined;
  await expect(fetch(`http://127.0.0.1:${port}/`)).rejects.toThrow();
});
