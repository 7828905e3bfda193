import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import autocannon from 'autocannon';
import { perConnectionHeaders } from '../src/per-connection';

/** A short real autocannon run against a local server that records what each connection sent. */
async function run(
  connections: number,
  tokens: string[],
): Promise<{ byConnection: Map<string, Set<string>>; seen: IncomingHttpHeaders[]; errors: number }> {
  const byConnection = new Map<string, Set<string>>();
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    const conn = `${req.socket.remotePort}`;
    const auth = req.headers.authorization ?? '(none)';
    if (!byConnection.has(conn)) byConnection.set(conn, new Set());
    byConnection.get(conn)!.add(auth);
    seen.push(req.headers);
    req.resume();
    req.on('end', () => res.end('{}'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const { port } = server.address() as AddressInfo;
    const result = await autocannon({
      url: `http://127.0.0.1:${port}/graphql`,
      connections,
      amount: connections * 20,
      method: 'POST',
      body: '{"query":"{ me { id } }"}',
      headers: { 'content-type': 'application/json' },
      setupClient: perConnectionHeaders(tokens.map((t) => ({ authorization: `Bearer ${t}` }))),
    });
    return { byConnection, seen, errors: result.errors + result.non2xx };
  } finally {
    await new Promise((r) => server.close(r));
  }
}

describe('perConnectionHeaders', () => {
  it('gives every autocannon connection its own token for the whole run, keeping the run headers', async () => {
    const tokens = Array.from({ length: 8 }, (_, i) => `token-${i}`);
    const { byConnection, seen, errors } = await run(8, tokens);
    expect(errors).toBe(0);
    expect(seen.length).toBeGreaterThanOrEqual(8 * 20);
    // 8 connections, each always sending one token, all 8 tokens used.
    expect(byConnection.size).toBe(8);
    for (const auths of byConnection.values()) expect(auths.size).toBe(1);
    expect(new Set([...byConnection.values()].flatMap((s) => [...s]))).toEqual(new Set(tokens.map((t) => `Bearer ${t}`)));
    expect(seen.every((h) => h['content-type'] === 'application/json' && h['content-length'] === '25')).toBe(true);
  });

  it('cycles through the tokens when there are more connections than tokens', async () => {
    const { byConnection } = await run(4, ['a', 'b']);
    const counts = new Map<string, number>();
    for (const auths of byConnection.values()) for (const a of auths) counts.set(a, (counts.get(a) ?? 0) + 1);
    expect(Object.fromEntries(counts)).toEqual({ 'Bearer a': 2, 'Bearer b': 2 });
  });

  it('refuses an empty list', () => {
    expect(() => perConnectionHeaders([])).toThrow(/no header sets/);
  });
});
