import { startE2ESystem } from './helpers';

/**
 * The launcher keeps the embedded system up: a service killed outright is restarted with backoff
 * while the gateway keeps serving everything else, and a service that cannot start at all ends
 * in a clean stop that names it instead of a restart loop forever.
 */
async function partialGraphQL(url: string) {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ products(limit: 1) { meta { total } } user(id: "1") { name } }' }),
    signal: AbortSignal.timeout(5_000),
  });
  return {
    status: res.status,
    body: (await res.json()) as { data?: unknown; errors?: { message: string; extensions?: { code?: string } }[] },
  };
}

it('restarts a service killed with SIGKILL; the other routes are answered throughout', async () => {
  const sys = await startE2ESystem();
  try {
    const content = sys.system.processes.find((p) => p.name === 'content')!;
    const firstPid = content.child.pid;
    content.child.kill('SIGKILL');

    // While content is down or coming back: catalog's routes answer, content's fail fast and cleanly.
    const seen = new Set<number>();
    let partial: Awaited<ReturnType<typeof partialGraphQL>> | undefined;
    const deadline = Date.now() + 20_000;
    let back = false;
    while (Date.now() < deadline && !back) {
      const products = await fetch(`${sys.url}/products?limit=1`, { signal: AbortSignal.timeout(2_000) });
      expect(products.status).toBe(200);
      const hello = await fetch(`${sys.url}/hello`, { signal: AbortSignal.timeout(2_000) });
      seen.add(hello.status);
      if (hello.status === 200) back = content.child.pid !== firstPid;
      else {
        expect(hello.status).toBe(503);
        expect(await hello.json()).toEqual({ error: 'Service unavailable' });
        if (!partial) partial = await partialGraphQL(sys.url);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(back).toBe(true);
    expect(seen.has(503)).toBe(true);
    // GraphQL during the outage: catalog's field answered, content's null with an error.
    expect(partial?.status).toBe(200);
    expect(partial?.body.data).toEqual({ products: { meta: { total: expect.any(Number) } }, user: null });
    // The gateway cannot tell which field an unreachable subgraph would have answered: the error
    // names the failure (docs/api/conventions.md), not a path.
    expect(partial?.body.errors).toEqual([{ message: 'Service unavailable', extensions: { code: 'SERVICE_UNAVAILABLE' } }]);
    expect(content.restarts).toBe(1);
    expect(sys.logs.some((l) => /^launcher\| content exited unexpectedly \(SIGKILL\); restarting in 0\.5 s/.test(l))).toBe(true);
    // GraphQL through the restarted subgraph works again.
    const res = await fetch(`${sys.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ user(id: "1") { name } }' }),
    });
    expect(((await res.json()) as { data: { user: { name: string } } }).data.user.name).toBe('Admin');
  } finally {
    await sys.stop();
  }
}, 90_000);

it('gives up on a service that crashes at every start, stops the rest, and names it', async () => {
  let gatewayUrl = '';
  const started = startE2ESystem({
    onStarting: (addresses) => void (gatewayUrl = addresses.gatewayUrl),
    // A short policy for the test; the default is 0.5 s doubling to 10 s, 5 crashes within 60 s.
    restart: { initialDelayMs: 100, maxDelayMs: 400, maxCrashes: 3, windowMs: 60_000 },
    // A preload that does not exist makes catalog's node exit with code 1 at once, every time.
    envFor: { catalog: { NODE_OPTIONS: '--require ./no-such-preload.js' } },
  });
  await expect(started).rejects.toThrow(/catalog crashed 3 times within 60 s \(last: code 1\); giving up and stopping Halo\./);
  // Everything it had started is gone: nothing answers at the gateway's address any more.
  expect(gatewayUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  await expect(fetch(`${gatewayUrl}/healthz`, { signal: AbortSignal.timeout(1_000) })).rejects.toThrow();
}, 90_000);

it('does not restart a service that can never start as configured: its one line, and everything stops', async () => {
  const logs: string[] = [];
  let gatewayUrl = '';
  const started = startE2ESystem({
    onStarting: (addresses) => void (gatewayUrl = addresses.gatewayUrl),
    // An invalid setting: catalog exits with EXIT_CANNOT_START and one line naming the variable.
    envFor: { catalog: { BODY_LIMIT: 'lots' } },
  }).catch((err: Error) => {
    logs.push(...err.message.split('\n'));
    throw err;
  });
  await expect(started).rejects.toThrow(/^catalog: Invalid configuration: BODY_LIMIT: .*; stopping Halo\./);
  expect(logs.filter((l) => l.includes('restarting'))).toEqual([]);
  expect(gatewayUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  await expect(fetch(`${gatewayUrl}/healthz`, { signal: AbortSignal.timeout(1_000) })).rejects.toThrow();
}, 90_000);
