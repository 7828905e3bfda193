import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { signAccessToken } from '@halo/kit/auth';
import type { ServiceContract } from '@halo/kit/contract';
import { freePort, TEST_JWT_SECRET } from '@halo/kit/testing';
import { checkoutContracts } from '../tools/src/checkout-contracts';
import { devCredentialsFile, developerToken } from '../tools/src/dev-credentials';
import { gql, startE2ESystem, until } from './helpers';

/**
 * The gateway against the real registry (issue 25), every process real: services publish their
 * contracts at start, the gateway polls `GET /v1/supergraph`, and what a team publishes is served
 * without a gateway restart. The registry runs in development mode, so the test publishes with the
 * developer key the launcher leaves for `npm run subgraph` (docs/registry.md); the gateway
 * authenticates with its service token as in production.
 */
let sys: Awaited<ReturnType<typeof startE2ESystem>>;
let gateway: string;
let registry: string;
let catalog: ServiceContract;
let replica: ChildProcess | undefined;
let late: ChildProcess | undefined;
/** The replica's base URL (started in the convergence test). */
let second = '';
/** The first gateway's environment, for more gateway processes. */
const gatewayEnv = () =>
  Object.fromEntries(
    readFileSync(`/proc/${sys.system.processes.find((p) => p.name === 'gateway')!.child.pid}/environ`, 'utf8')
      .split('\0')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );

const POLL_MS = 300;
const readyz = async (url = gateway) =>
  (await (await fetch(`${url}/readyz`)).json()) as { status: string; composition: string; source: string; registry: string };
/** As `npm run subgraph` does against npm start: with the developer key the launcher left for it. */
const post = async (path: string, body: unknown) => {
  const token = await developerToken(registry);
  const res = await fetch(`${registry}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { 'x-halo-service-token': token } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any }; // any: the registry's JSON, asserted per test
};
/** Publishes (each publish adds to the last: never a removal) and waits until the gateway serves it. */
const publishServed = async (contract: ServiceContract, url = gateway) => {
  const published = await post('/v1/publish', { contract });
  expect(published.status).toBe(201);
  catalog = contract;
  const composition = String(published.body.composition);
  await until(`composition ${composition} served`, async () => (await readyz(url)).composition === composition);
  return composition;
};
const withSdl = (extra: string, base = catalog): ServiceContract => ({ ...base, sdl: `${base.sdl}\n${extra}\n` });
const queryFields = async (url = gateway) => {
  const { body } = await gql(url, '{ __type(name: "Query") { fields { name } } }');
  return (body.data.__type.fields as { name: string }[]).map((f) => f.name);
};

beforeAll(async () => {
  sys = await startE2ESystem({
    postgres: true,
    envFor: {
      gateway: { REGISTRY_POLL_MS: String(POLL_MS), USAGE_FLUSH_MS: '500' },
      registry: { HALO_ENV: 'development' },
    },
  });
  gateway = sys.url;
  registry = sys.direct('registry');
  const mine = checkoutContracts().find((c) => c.service === 'catalog')!;
  catalog = { ...mine, url: sys.direct('catalog') };
  // Every service published at start; the gateway serves the registry's composition.
  await until('the registry composition served', async () => (await readyz()).source === 'registry');
}, 180_000);

afterAll(async () => {
  replica?.kill('SIGTERM');
  late?.kill('SIGTERM');
  await sys?.stop();
  // Removed at stop: the next start makes a new key.
  if (registry) expect(existsSync(devCredentialsFile(Number(new URL(registry).port)))).toBe(false);
});

it('leaves npm run subgraph a developer key readable by its user only; without a credential a publish is 401', async () => {
  expect(statSync(devCredentialsFile(Number(new URL(registry).port))).mode & 0o777).toBe(0o600);
  const res = await fetch(`${registry}/v1/publish`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ contract: catalog }),
  });
  expect({ status: res.status, body: await res.json() }).toEqual({ status: 401, body: { error: 'Token required' } });
});

it('serves an additive publish without a restart: a new field and a new REST route', async () => {
  const pid = sys.system.processes.find((p) => p.name === 'gateway')!.child.pid;
  expect(await queryFields()).not.toContain('e2eAdded');
  expect((await fetch(`${gateway}/metrics`)).status).toBe(404);
  const rest = catalog.rest!;
  const added: ServiceContract = {
    ...withSdl('extend type Query { e2eAdded: String }'),
    rest: {
      routes: [...rest.routes, { service: 'catalog', method: 'GET', path: '/metrics' }],
      openapi: {
        ...rest.openapi,
        paths: {
          ...rest.openapi.paths,
          '/metrics': {
            get: { operationId: 'e2eCatalogMetrics', tags: ['catalog'], responses: { '200': { description: 'Prometheus text' } } },
          },
        },
      },
    },
  };
  await publishServed(added);
  expect(await queryFields()).toContain('e2eAdded');
  // The new route goes to catalog, which serves its metrics there.
  const metrics = await fetch(`${gateway}/metrics`);
  expect(metrics.status).toBe(200);
  expect(await metrics.text()).toContain('halo_');
  const openapi = (await (await fetch(`${gateway}/openapi.json`)).json()) as { paths: Record<string, unknown> };
  expect(Object.keys(openapi.paths)).toContain('/metrics');
  expect(sys.system.processes.find((p) => p.name === 'gateway')!.child.pid).toBe(pid);
});

it('refuses a publish that does not compose; the gateway keeps serving what it served', async () => {
  const before = await readyz();
  // content owns Query.users; a second, different definition does not compose.
  const refused = await post('/v1/publish', { contract: withSdl('extend type Query { users: Int }') });
  expect(refused.status).toBe(422);
  expect(refused.body.report.composition.ok).toBe(false);
  await new Promise((r) => setTimeout(r, POLL_MS * 4));
  expect((await readyz()).composition).toBe(before.composition);
  const { body } = await gql(gateway, '{ products(limit: 1) { data { id } } }');
  expect(body.errors).toBeUndefined();
});

it('keeps an open subscription open across an additive publish', async () => {
  const token = signAccessToken({ sub: '2', name: 'User 2', role: 'user' }, TEST_JWT_SECRET, 300);
  const client = createClient({
    url: `${gateway.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${token}` },
    retryAttempts: 0,
  });
  const room = `e2e-registry-${Date.now()}`;
  const events: string[] = [];
  const errors: unknown[] = [];
  let completed = false;
  const stop = client.subscribe(
    { query: 'subscription($c: ID!) { newMessage(chatId: $c) { text author { name } } }', variables: { c: room } },
    {
      next: (v) => void events.push((v.data as any)?.newMessage?.text),
      error: (e) => void errors.push(e),
      complete: () => void (completed = true),
    },
  );
  const send = (text: string) =>
    gql(
      gateway,
      'mutation($c: ID!, $t: String!) { sendMessage(chatId: $c, text: $t) { id } }',
      { c: room, t: text },
      { authorization: `Bearer ${token}` },
    );
  try {
    let i = 0;
    await until('the subscription to be live', async () => {
      await send(`probe ${++i}`);
      return events.includes(`probe ${i}`);
    });
    await publishServed(withSdl('extend type Query { e2eAddedForSubscriptions: String }'));
    await send('after the publish');
    await until('the event after the publish', async () => events.includes('after the publish'));
    expect(errors).toEqual([]);
    expect(completed).toBe(false);
  } finally {
    stop();
    await client.dispose();
  }
});

it('sends usage to the registry, whose check then refuses removing a used field, naming the operation, client and version', async () => {
  const query = 'query E2ECatalogPrices { products(limit: 2) { data { id name price } } }';
  for (let i = 0; i < 3; i++) {
    const { body } = await gql(gateway, query, undefined, {
      'apollographql-client-name': 'e2e-shop',
      'apollographql-client-version': '1.4.0',
    });
    expect(body.errors).toBeUndefined();
  }
  const removed: ServiceContract = { ...catalog, sdl: catalog.sdl!.replace(/\n\s*"The price[^\n]*\n\s*price: Float!/, '') };
  // Product.price only (NewProduct and ProductChanges keep theirs).
  expect(removed.sdl).not.toContain('The price, a number');
  // The gateway reports usage in batches off the request path: the three may arrive in two reports.
  const report = await until('all three operations to reach the registry and block the removal', async () => {
    const check = await post('/v1/check', { contract: removed });
    expect(check.status).toBe(200);
    const change = (check.body.report.changes as any[]).find((c) => c.path === 'Product.price');
    const counted = (change?.usage?.operations as any[] | undefined)?.find((o) => o.name === 'E2ECatalogPrices')?.count ?? 0;
    return counted >= 3 ? check.body : null;
  });
  expect(report.ok).toBe(false);
  const change = (report.report.changes as any[]).find((c) => c.path === 'Product.price');
  expect(change.breaking).toBe(true);
  expect(change.usage.operations).toEqual(
    expect.arrayContaining([expect.objectContaining({ name: 'E2ECatalogPrices', client: 'e2e-shop', clientVersion: '1.4.0', count: 3 })]),
  );
  // The note names the client with its version, as `rover subgraph check` does.
  expect(report.report.notes).toEqual(
    expect.arrayContaining([
      expect.stringMatching(/^Product\.price: breaking and used \d+ times .* by .*E2ECatalogPrices \(e2e-shop 1\.4\.0, 3\)/),
    ]),
  );
});

it('records enum values as the executor saw them: removing one a client sends in variables is refused, naming it', async () => {
  const query = 'query E2ESortedByPrice($s: ProductSort) { products(limit: 2, sort: $s) { data { id } } }';
  const { body } = await gql(gateway, query, { s: 'PRICE' }, { 'apollographql-client-name': 'e2e-sorter' });
  expect(body.errors).toBeUndefined();
  const removed: ServiceContract = { ...catalog, sdl: catalog.sdl!.replace(/\n\s*PRICE\n/, '\n') };
  expect(removed.sdl).not.toMatch(/\bPRICE\b/);
  const report = await until('the operation to reach the registry and block the removal', async () => {
    const check = await post('/v1/check', { contract: removed });
    const change = (check.body.report.changes as any[]).find((c) => c.path === 'ProductSort.PRICE');
    return change?.usage?.count > 0 ? check.body : null;
  });
  expect(report.ok).toBe(false);
  const change = (report.report.changes as any[]).find((c) => c.path === 'ProductSort.PRICE');
  expect(change).toEqual(expect.objectContaining({ type: 'ENUM_VALUE_REMOVED', breaking: true }));
  expect(change.usage.operations).toEqual([expect.objectContaining({ name: 'E2ESortedByPrice', client: 'e2e-sorter', count: 1 })]);
  // A value nobody sent is free to go.
  const unused = await post('/v1/check', { contract: { ...catalog, sdl: catalog.sdl!.replace(/\n\s*CREATED_AT\n/, '\n') } });
  expect(unused.body.report.changes).toEqual([
    expect.objectContaining({ path: 'ProductSort.CREATED_AT', usage: { count: 0, operations: [] } }),
  ]);
});

it('reports the cost the gateway estimated for each operation: the registry orders the top operations by it', async () => {
  const cheap = 'query E2ECheapList { products(limit: 1) { data { id } } }';
  const costly = 'query E2ECostlyList { products(limit: 50) { data { id name price } } }';
  const client = { 'apollographql-client-name': 'e2e-costs' };
  for (let i = 0; i < 4; i++) expect((await gql(gateway, cheap, undefined, client)).body.errors).toBeUndefined();
  expect((await gql(gateway, costly, undefined, client)).body.errors).toBeUndefined();
  type Top = { name: string; count: number; cost: { perRequest: number; total: number } | null };
  const top = async (by: string) =>
    ((await (await fetch(`${registry}/v1/usage/operations?by=${by}&limit=200`)).json()) as { operations: Top[] }).operations;
  const mine = (ops: Top[]) => ops.filter((o) => o.name.startsWith('E2ECheap') || o.name.startsWith('E2ECostly'));
  const byCost = await until('both operations to reach the registry with their cost', async () => {
    const ops = mine(await top('cost'));
    return ops.length === 2 && ops.every((o) => o.cost) && ops.reduce((n, o) => n + o.count, 0) === 5 ? ops : null;
  });
  // Per request the 50-product page costs more than the one-product page, whichever is busier.
  expect(byCost.map((o) => o.name)).toEqual(['E2ECostlyList', 'E2ECheapList']);
  const [costlyOp, cheapOp] = byCost as [Top, Top];
  expect(costlyOp.cost!.perRequest).toBeGreaterThan(cheapOp.cost!.perRequest);
  expect(cheapOp.cost!.total).toBeCloseTo(cheapOp.cost!.perRequest * 4, 5);
  expect(mine(await top('requests')).map((o) => o.name)).toEqual(['E2ECheapList', 'E2ECostlyList']);
  const refused = await fetch(`${registry}/v1/usage/operations?by=price`);
  expect(refused.status).toBe(400);
  expect(await refused.json()).toEqual({ error: 'by must be one of requests, cost, totalCost' });
});

it('two gateway replicas converge on the same composition', async () => {
  // A second gateway process with the first one's settings (its key: the registry trusts it).
  const env = gatewayEnv();
  const port = await freePort();
  // As production runs it: not ready on the committed files before the registry answers.
  replica = spawn(process.execPath, [resolve(__dirname, '../gateway/dist/main.js')], {
    env: { ...env, HTTP_PORT: String(port), METRICS_PORT: 'off', REGISTRY_BOOT_FROM_FILES: 'false' },
    stdio: 'ignore',
  });
  second = `http://127.0.0.1:${port}`;
  await until('the replica to serve the registry composition', async () => {
    const r = await readyz(second);
    return r.source === 'registry' && r.composition === (await readyz()).composition;
  });
  const composition = await publishServed(withSdl('extend type Query { e2eConverged: String }'));
  await until('the replica to serve it too', async () => (await readyz(second)).composition === composition);
  expect(await queryFields(second)).toContain('e2eConverged');
  const { body } = await fetch(`${registry}/v1/gateways`).then(async (r) => ({
    body: (await r.json()) as { gateways: { id: string; composition: number }[] },
  }));
  expect(body.gateways.filter((g) => String(g.composition) === composition).length).toBeGreaterThanOrEqual(2);
});

it('with the registry stopped, serves the last good composition and says so; catches up when it is back', async () => {
  const served = await readyz();
  const reg = sys.system.processes.find((p) => p.name === 'registry')!;
  reg.child.kill('SIGSTOP');
  try {
    const away = await until('readyz to report the registry away', async () => {
      const r = await readyz();
      return r.registry.startsWith('unreachable since ') ? r : null;
    });
    expect(away).toEqual(expect.objectContaining({ status: 'ready', composition: served.composition }));
    expect(await queryFields()).toContain('e2eConverged');
    // The replica reached the registry before: it stays ready on what it serves, as production runs it.
    expect(await readyz(second)).toEqual(expect.objectContaining({ status: 'ready', composition: served.composition }));
    // A publish fails loudly while it is away (here: no answer at all).
    await expect(fetch(`${registry}/v1/services`, { signal: AbortSignal.timeout(1_000) })).rejects.toThrow();
    // A gateway (re)started now would serve the committed files, older than its peers: not ready.
    const port = await freePort();
    late = spawn(process.execPath, [resolve(__dirname, '../gateway/dist/main.js')], {
      env: { ...gatewayEnv(), HTTP_PORT: String(port), METRICS_PORT: 'off', REGISTRY_BOOT_FROM_FILES: 'false' },
      stdio: 'ignore',
    });
    const lateUrl = `http://127.0.0.1:${port}`;
    const notReady = await until('the late gateway to answer /readyz', async () => {
      const res = await fetch(`${lateUrl}/readyz`);
      return res.status === 503 ? ((await res.json()) as { status: string; reason?: string; source: string }) : null;
    });
    expect(notReady).toEqual(
      expect.objectContaining({ status: 'unavailable', source: 'file', reason: expect.stringContaining('registry has not answered') }),
    );
    reg.child.kill('SIGCONT');
    const caughtUp = await until('the late gateway ready on the registry composition', async () => {
      const r = await readyz(lateUrl);
      return r.status === 'ready' ? r : null;
    });
    expect(caughtUp).toEqual(expect.objectContaining({ source: 'registry', composition: served.composition }));
    expect(await queryFields(lateUrl)).toContain('e2eConverged');
  } finally {
    reg.child.kill('SIGCONT');
  }
  await until('the registry back', async () => (await readyz()).registry === 'ok');
  await publishServed(withSdl('extend type Query { e2eAfterOutage: String }'));
});
