import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { closedPort, freePort, freePorts, portIsFree } from './ports';

it('closedPort: a port that fetch reaches and is refused on, outside the range listen(0) hands out', async () => {
  const port = await closedPort();
  const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
  expect(port).toBeLessThan(Math.min(low!, 1024));
  const failure = await fetch(`http://127.0.0.1:${port}/`).catch((err: { cause?: { code?: string } }) => err.cause?.code);
  expect(failure).toBe('ECONNREFUSED');
});

it('freePort and portIsFree: a port handed out is free until something listens on it', async () => {
  const port = await freePort();
  expect(await portIsFree(port)).toBe(true);
  const server = createServer().listen(port, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  expect(await portIsFree(port)).toBe(false);
  await new Promise((r) => server.close(r));
});

it('freePorts: as many distinct free ports as asked, none of those to avoid', async () => {
  const avoid = new Set(await freePorts(20));
  const ports = await freePorts(20, avoid);
  expect(new Set(ports).size).toBe(20);
  expect(ports.filter((p) => avoid.has(p))).toEqual([]);
  for (const port of ports) expect(await portIsFree(port)).toBe(true);
});
