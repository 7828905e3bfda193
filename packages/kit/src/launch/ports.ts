import { connect, createServer, type AddressInfo, type Server } from 'node:net';

/** A loopback port nothing listens on right now (the OS's choice). */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, host, () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/**
 * `count` distinct loopback ports nothing listens on right now (the OS's choice), none of them in
 * `avoid`. Every probe stays open until all are found, so the OS cannot hand out one port twice.
 */
export async function freePorts(count: number, avoid: ReadonlySet<number> = new Set(), host = '127.0.0.1'): Promise<number[]> {
  const probes: Server[] = [];
  const found: number[] = [];
  try {
    while (found.length < count) {
      const probe = createServer();
      probes.push(probe);
      await new Promise<void>((resolve, reject) => {
        probe.once('error', reject);
        probe.listen(0, host, () => resolve());
      });
      const { port } = probe.address() as AddressInfo;
      if (!avoid.has(port)) found.push(port);
    }
    return found;
  } finally {
    await Promise.all(probes.map((probe) => new Promise((resolve) => probe.close(resolve))));
  }
}

/**
 * Whether `port` can be bound on `host` now. A server on the wildcard address (0.0.0.0) holds the
 * port for loopback too, so this finds both.
 */
export function portIsFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, host, () => probe.close(() => resolve(true)));
  });
}

/**
 * A loopback port that refuses connections, for tests of "the other side is away". It is taken
 * below 1024, where no test and no ephemeral bind (`listen(0)`) ever lands: a port the OS handed
 * out and took back (`freePort`) can be handed to a parallel test's server a moment later, and
 * then "away" answers. Each candidate is checked to refuse a connection now.
 */
export async function closedPort(host = '127.0.0.1'): Promise<number> {
  for (const port of CLOSED_CANDIDATES) {
    if (await refuses(port, host)) return port;
  }
  throw new Error(`no closed port among ${CLOSED_CANDIDATES.join(', ')} on ${host}`);
}

/**
 * Unassigned or long-obsolete well-known ports, none used on a modern host, and none on fetch's
 * "bad ports" list (which fetch refuses before connecting: port 1 fails as "fetch failed").
 */
const CLOSED_CANDIDATES = [3, 5, 27, 29, 31, 33, 35];

function refuses(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });
}
