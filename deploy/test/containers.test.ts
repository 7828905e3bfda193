import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createClient as createSseClient } from 'graphql-sse';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { ensureTestInfraImages, resolveNodeBase } from '../../tools/src/containers/base-image';
import { freePort } from '@halo/kit/testing';
import { podman, ROOT } from '../../tools/src/containers/podman';
import { dockerfileArgDefault } from '../../tools/src/images';
import { COMPONENTS, containerTestsSkipped, startHalo, type RunningHalo } from './halo-containers';
import { callHalo, loadCaller, openSubscriptions, registerUser, sleep, steadyLoad, until, type LoadStats } from './traffic';

/**
 * Halo run from its images the way the chart runs it (npm run test:containers; README "Deploy
 * with Helm"): every Deployment, Service, Secret, ConfigMap and hook Job that helm/halo and
 * catalog's helm/halo-service release render, started as podman containers with the pods'
 * security context, probes and limits, against PostgreSQL (TLS) and Redis containers. Then what a
 * client does through the gateway, a catalog-only release under load, and crashes under load.
 * Images come from `npm run images` (tag `local`, or HALO_IMAGE_TAG).
 */
const skipped = containerTestsSkipped();
if (skipped) process.stderr.write(`deploy/test/containers.test.ts: ${skipped}\n`);
const maybe = skipped ? describe.skip : describe;

const TAG = process.env.HALO_IMAGE_TAG ?? 'local';
const FIGURES = join(ROOT, '.data/containers/figures.json');

let halo: RunningHalo;
const figures: Record<string, unknown> = {};
let adminToken = '';
let aliceToken = '';

const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  callHalo(halo.url, method, path, body, headers);
const gql = (query: string, variables: Record<string, unknown> = {}, token = aliceToken) =>
  call('POST', '/graphql', { query, variables }, token ? { authorization: `Bearer ${token}` } : {});
const register = (name: string) => registerUser(halo.url, name);
const caller = () => loadCaller(halo.secrets.jwtSecret);

maybe('Halo from its images, as the chart runs it', () => {
  beforeAll(async () => {
    // The base the images were built on (npm run images chose it the same way) runs the Service proxies.
    const dockerfile = readFileSync(join(ROOT, 'deploy/Dockerfile'), 'utf8');
    const base = await resolveNodeBase(process.env.NODE_IMAGE || dockerfileArgDefault(dockerfile, 'NODE_IMAGE')!);
    const infra = await ensureTestInfraImages(base);
    const started = Date.now();
    halo = await startHalo({
      tag: TAG,
      proxyImage: base,
      postgresImage: infra.postgres,
      redisImage: infra.redis,
      // A port of its own: nothing else on this machine may reach this system's gateway by accident.
      gatewayPort: await freePort(),
    });
    figures.installSeconds = (Date.now() - started) / 1000;
    figures.startToReadyMs = halo.startToReady;
  }, 900_000);

  afterAll(async () => {
    mkdirSync(join(ROOT, '.data/containers'), { recursive: true });
    writeFileSync(FIGURES, JSON.stringify({ at: new Date().toISOString(), tag: TAG, ...figures }, null, 2));
    await halo?.stop();
  }, 120_000);

  describe('the install', () => {
    it("ran Helm's order: the hook Secret, roles, migrations, then the pods, then the contract publishes", () => {
      const events = halo.cluster.events;
      const at = (what: string) => {
        const i = events.indexOf(what);
        expect({ what, found: i >= 0 }).toEqual({ what, found: true });
        return i;
      };
      expect(at('hook Secret/halo-hooks')).toBeLessThan(at('hook Job/halo-provision-roles'));
      expect(at('done Job/halo-provision-roles')).toBeLessThan(at('hook Job/halo-auth-migrate'));
      for (const svc of ['auth', 'content', 'payments', 'chat', 'registry']) {
        expect(at(`done Job/halo-${svc}-migrate`)).toBeLessThan(at(`apply Deployment/halo-${svc}`));
        if (svc !== 'registry') expect(at(`ready Deployment/halo-${svc}`)).toBeLessThan(at(`hook Job/halo-${svc}-publish`));
      }
      expect(at('done Job/halo-catalog-migrate')).toBeLessThan(at('apply Deployment/halo-catalog'));
      expect(at('ready Deployment/halo-catalog')).toBeLessThan(at('hook Job/halo-catalog-publish'));
    });

    it("runs every pod with the chart's security context: uid 1000, read-only root, no capabilities, memory limit", async () => {
      for (const c of COMPONENTS) {
        const [pod] = halo.cluster.podsOf(`halo-${c}`);
        expect({ c, pod: Boolean(pod) }).toEqual({ c, pod: true });
        const inspect = JSON.parse((await podman(['inspect', pod!.container])).stdout)[0];
        expect({ c, user: inspect.Config.User, readOnly: inspect.HostConfig.ReadonlyRootfs }).toEqual({
          c,
          user: '1000:1000',
          readOnly: true,
        });
        expect(inspect.HostConfig.SecurityOpt).toContain('no-new-privileges');
        expect(inspect.EffectiveCaps ?? []).toEqual([]);
        expect(inspect.HostConfig.Memory).toBeGreaterThan(0);
        // The image has no shell: node itself tries to write where a pod may not, and where it may.
        const write = (path: string) =>
          podman(['exec', pod!.container, 'node', '-e', `require('fs').writeFileSync(${JSON.stringify(path)}, 'x')`], {
            allowFailure: true,
          });
        expect((await write('/app/x')).stderr).toMatch(/EROFS|EACCES/);
        expect((await write('/tmp/x')).code).toBe(0);
        expect((await podman(['exec', pod!.container, 'sh', '-c', 'true'], { allowFailure: true })).code).not.toBe(0);
        const ready = await fetch(
          `http://${pod!.ip}:${inspect.Config.Env.find((e: string) => e.startsWith('HTTP_PORT=')).slice(10)}/readyz`,
        );
        expect({ c, status: ready.status }).toEqual({ c, status: 200 });
      }
    });

    it("serves the registry's composition, with every service published", async () => {
      const ready = await call('GET', '/readyz');
      expect(ready.status).toBe(200);
      expect(ready.body).toMatchObject({ status: 'ready', source: 'registry', registry: 'ok' });
      expect(ready.body.composition).not.toMatch(/^file:/);
      figures.composition = ready.body.composition;
    });
    it('idles within its memory limit (each container, as podman counts it)', async () => {
      await sleep(5_000);
      const stats = JSON.parse((await podman(['stats', '--no-stream', '--format', 'json'])).stdout) as {
        name: string;
        mem_usage: string;
      }[];
      const memory: Record<string, number> = {};
      const rss: Record<string, number> = {};
      for (const c of COMPONENTS) {
        const pod = halo.cluster.podsOf(`halo-${c}`)[0]!;
        const usage = stats.find((s) => s.name === pod.container)?.mem_usage.split(' / ')[0] ?? '';
        const mb = Number.parseFloat(usage) * ({ kB: 1e-3, MB: 1, GB: 1e3 }[usage.replace(/^[\d.]+/, '')] ?? NaN);
        memory[c] = Math.round(mb * 10) / 10;
        // The chart's limit here (ci/containers.yaml): 384 MiB.
        expect({ c, mb: memory[c] < 384 * 1.048576 }).toEqual({ c, mb: true });
        // The process's own RSS, as `npm run bench:startup` reads the same processes under npm start.
        const pid = (await podman(['inspect', '--format', '{{.State.Pid}}', pod.container])).stdout.trim();
        const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
        rss[c] = Math.round(Number(kb) / 1024);
      }
      figures.idleMemoryMB = memory;
      figures.idleRssMB = rss;
    }, 60_000);
  });

  describe('what a client does, through the gateway', () => {
    it('GET /hello and /openapi.json', async () => {
      expect(await call('GET', '/hello')).toMatchObject({ status: 200, body: { message: 'Halo Dunia!' } });
      const openapi = await call('GET', '/openapi.json');
      expect(openapi.status).toBe(200);
      expect(openapi.body.paths['/products']).toBeDefined();
    });

    it('registers, logs in, and renews the token from the refresh cookie', async () => {
      const alice = await register('Alice');
      aliceToken = alice.token;
      const profile = await call('GET', '/profile', undefined, { authorization: `Bearer ${alice.token}` });
      expect(profile).toMatchObject({ status: 200, body: { name: 'Alice' } });
      const refreshed = await call('POST', '/auth/refresh', undefined, { cookie: alice.cookie });
      expect(refreshed.status).toBe(200);
      expect(typeof refreshed.body.token).toBe('string');
    });

    it('an admin (made by the operator in the database) writes products; clients list them with filters', async () => {
      const admin = await register('Admin');
      await halo.psql(`UPDATE content.users SET role = 'admin' WHERE id = ${admin.id}`);
      const login = await call('POST', '/auth/refresh', undefined, { cookie: admin.cookie });
      adminToken = login.body.token;
      for (const [name, category, price] of [
        ['Kopi', 'food', 4.5],
        ['Teh', 'food', 3],
        ['Buku', 'books', 12.25],
      ] as const) {
        const made = await call('POST', '/products', { name, category, price }, { authorization: `Bearer ${adminToken}` });
        expect(made.status).toBe(201);
      }
      const food = await call('GET', '/products?category=food&sort=price&order=desc');
      expect(food.status).toBe(200);
      expect(food.body.data.map((p: { name: string }) => p.name)).toEqual(['Kopi', 'Teh']);
      expect(food.body.meta).toMatchObject({ total: 2, page: 1 });
      expect((await call('GET', '/products?sort=colour')).body).toEqual({ error: 'Invalid sort' });
    });

    it('answers a cross-subgraph me { orders { product user } }', async () => {
      const products = await call('GET', '/products?limit=1');
      const order = await call(
        'POST',
        '/api/orders',
        { product_id: products.body.data[0].id, client_order_id: `ct-${randomUUID()}` },
        { authorization: `Bearer ${aliceToken}` },
      );
      expect(order.status).toBe(201);
      const me = await gql('{ me { name orders { id product { name } user { name } } } }');
      expect(me.status).toBe(200);
      expect(me.body.errors).toBeUndefined();
      expect(me.body.data.me.orders).toEqual([
        expect.objectContaining({ product: { name: products.body.data[0].name }, user: { name: 'Alice' } }),
      ]);
    });

    it('a payment replayed with its Idempotency-Key gets the same answer, charged once', async () => {
      const key = randomUUID();
      const headers = { authorization: `Bearer ${aliceToken}`, 'idempotency-key': key };
      const first = await call('POST', '/api/payments', { amount: 25.5 }, headers);
      expect(first.status).toBe(201);
      const again = await call('POST', '/api/payments', { amount: 25.5 }, headers);
      expect(again).toMatchObject({ status: first.status, body: first.body });
    });

    it('a chat subscription delivers over WebSocket and over SSE', async () => {
      const room = `ct-${Date.now()}`;
      const ws = createClient({
        url: `${halo.url.replace(/^http/, 'ws')}/graphql`,
        webSocketImpl: WebSocket,
        connectionParams: { authorization: `Bearer ${aliceToken}` },
        retryAttempts: 0,
      });
      const sse = createSseClient({
        url: `${halo.url}/graphql/stream`,
        headers: { authorization: `Bearer ${aliceToken}` },
        retryAttempts: 0,
      });
      const heard = { ws: [] as string[], sse: [] as string[] };
      const query = 'subscription($c: ID!) { newMessage(chatId: $c) { text author { name } } }';
      const sink = (into: string[]) => ({
        next: (v: any) => void into.push(`${v.data?.newMessage?.text}/${v.data?.newMessage?.author?.name}`),
        error: () => undefined,
        complete: () => undefined,
      });
      const stopWs = ws.subscribe({ query, variables: { c: room } }, sink(heard.ws));
      const stopSse = sse.subscribe({ query, variables: { c: room } }, sink(heard.sse));
      try {
        await until('both delivered', async () => {
          await gql('mutation($c: ID!) { sendMessage(chatId: $c, text: "hi") { id } }', { c: room });
          await sleep(300);
          return heard.ws.includes('hi/Alice') && heard.sse.includes('hi/Alice');
        });
      } finally {
        stopWs();
        stopSse();
        await ws.dispose();
        sse.dispose();
      }
    });
  });

  describe("a catalog-only release, as catalog's team ships one", () => {
    it('builds catalog v2 (a field and a REST route more) from a one-service change, reusing the layer cache', async () => {
      const context = mkdtempSync(join(tmpdir(), 'halo-catalog-v2-'));
      try {
        const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' })
          .split('\0')
          .filter((f) => f && existsSync(join(ROOT, f)));
        for (const f of files) {
          mkdirSync(dirname(join(context, f)), { recursive: true });
          cpSync(join(ROOT, f), join(context, f));
        }
        execFileSync('git', ['apply', join(ROOT, 'deploy/test/catalog-v2.patch')], { cwd: context });
        const started = Date.now();
        execFileSync(process.execPath, [join(ROOT, 'tools/dist/images.js'), '--only', 'catalog', '--tag', V2, '--context', context], {
          cwd: ROOT,
          stdio: 'inherit',
        });
        figures.catalogRebuildSeconds = (Date.now() - started) / 1000;
      } finally {
        rmSync(context, { recursive: true, force: true });
      }
    }, 900_000);

    it('upgrades catalog alone under load: 0 failed requests, 0 ended subscriptions, no other container restarted', async () => {
      const before = await containerStates();
      const listed = await call('GET', '/products?limit=1');
      const productId = listed.body.data?.[0]?.id as number | undefined;
      expect({ product: productId !== undefined }).toEqual({ product: true });
      const subscriptions = await openSubscriptions(halo.url, aliceToken, 50, async (room, text) => {
        const sent = await gql('mutation($c: ID!, $t: String!) { sendMessage(chatId: $c, text: $t) { id } }', { c: room, t: text });
        return String(sent.body.data?.sendMessage?.id);
      });
      const load = steadyLoad(60, async () => {
        const r = await gql('{ products(limit: 2) { data { id name } } posts(first: 1) { edges { node { title } } } }', {}, caller());
        return r.status === 200 && !r.body.errors ? null : `${r.status} ${JSON.stringify(r.body).slice(0, 200)}`;
      });
      const rest = steadyLoad(20, async () => {
        const r = await call('GET', '/products?limit=2', undefined, { authorization: `Bearer ${caller()}` });
        return r.status === 200 ? null : `${r.status} ${JSON.stringify(r.body).slice(0, 200)}`;
      });
      try {
        await sleep(3_000);
        const started = Date.now();
        await halo.cluster.upgrade(halo.catalogRelease(V2));
        figures.catalogUpgradeSeconds = (Date.now() - started) / 1000;
        // Served without a gateway restart: the registry's new composition arrives by its poll.
        await until('the new field through the gateway', async () => {
          const r = await gql('{ products(limit: 1) { data { sku } } }');
          return r.status === 200 && !r.body.errors;
        });
        await until('the new route through the gateway', async () => (await call('GET', `/products/${productId}/sku`)).status === 200);
        figures.catalogServedSeconds = (Date.now() - started) / 1000;
        await sleep(3_000);
      } finally {
        const [graphql, restStats] = await Promise.all([load.stop(), rest.stop()]);
        const ended = subscriptions.ended();
        const heard = await subscriptions.deliverAll();
        await subscriptions.close();
        figures.catalogRelease = { graphql, rest: restStats, subscriptions: { open: 50, ended, heardAfter: heard } };
      }
      const {
        graphql,
        rest: restStats,
        subscriptions: subs,
      } = figures.catalogRelease as {
        graphql: LoadStats;
        rest: LoadStats;
        subscriptions: { ended: string[]; heardAfter: number };
      };
      expect(graphql.failed).toEqual([]);
      expect(restStats.failed).toEqual([]);
      expect(graphql.ok).toBeGreaterThan(60 * 5);
      expect(subs.ended).toEqual([]);
      expect(subs.heardAfter).toBe(50);
      expect((await call('GET', `/products/${productId}/sku`)).body).toEqual({
        data: { id: productId, sku: expect.stringMatching(/^SKU-0*\d+$/) },
      });
      // The new catalog pod replaced the old one; nothing else restarted or changed.
      const after = await containerStates();
      for (const c of COMPONENTS.filter((x) => x !== 'catalog'))
        expect({ c, state: after[`halo-${c}`] }).toEqual({ c, state: before[`halo-${c}`] });
      expect(after['halo-catalog']!.container).not.toBe(before['halo-catalog']!.container);
      const ready = await call('GET', '/readyz');
      expect(ready.body.composition).not.toBe(figures.composition);
    }, 600_000);
  });

  describe('crashes under load', () => {
    const keys = Array.from({ length: 10 }, () => randomUUID());
    let paid: { status: number; body: unknown }[] = [];
    /** Payment `i` of Alice's, under its key. */
    const pay = (i: number, key: string) =>
      call('POST', '/api/payments', { amount: 10 + i }, { authorization: `Bearer ${aliceToken}`, 'idempotency-key': key });

    beforeAll(async () => {
      paid = [];
      for (const [i, key] of keys.entries()) {
        const r = await pay(i, key);
        paid.push({ status: r.status, body: r.body });
      }
    }, 60_000);

    /** What clients of each component ask while it is killed: GraphQL through the gateway. */
    const probes: Record<string, string> = {
      gateway: '{ products(limit: 1) { data { id } } posts(first: 1) { edges { node { id } } } }',
      chat: '{ messages(chatId: "faults", first: 1) { edges { node { id } } } }',
    };

    it.each(['gateway', 'chat'])(
      '%s killed: its restart policy brings it back; what clients saw is reported',
      async (component) => {
        const load = steadyLoad(40, async () => {
          const r = await gql(probes[component]!, {}, caller());
          return r.status === 200 && !r.body.errors ? null : `${r.status} ${JSON.stringify(r.body).slice(0, 120)}`;
        });
        await sleep(2_000);
        const pod = halo.cluster.podsOf(`halo-${component}`)[0]!;
        const pid = (await podman(['inspect', '--format', '{{.State.Pid}}', pod.container])).stdout.trim();
        const killed = Date.now();
        // The process dies on its own (as a crash would): podman's restart policy applies, as a kubelet's.
        process.kill(Number(pid), 'SIGKILL');
        const now = () => halo.cluster.podsOf(`halo-${component}`)[0]!;
        await until('the runner to see the restart', async () => now().restarts > pod.restarts, 30_000);
        await until('ready again', async () => now().ready, 120_000);
        const readyAfterMs = Date.now() - killed;
        await sleep(3_000);
        const stats = await load.stop();
        figures[`killed-${component}`] = {
          readyAfterMs,
          ok: stats.ok,
          failed: stats.failed.length,
          awayMs: stats.awayMs,
          firstFailures: stats.failed.slice(0, 3),
        };
        // Back, and whole: requests succeed again, and nothing else restarted.
        const after = await gql(probes[component]!);
        expect(after.body.errors).toBeUndefined();
        expect(stats.ok).toBeGreaterThan(0);
      },
      240_000,
    );

    it('loses nothing in payments: every key replayed afterwards gets the same answer', async () => {
      for (const [i, key] of keys.entries()) {
        const r = await pay(i, key);
        expect({ status: r.status, body: r.body }).toEqual(paid[i]);
      }
    });
  });
});

const V2 = `${TAG}-catalog-v2`;

/** Each Deployment's pod container and podman's restart count of it. */
async function containerStates(): Promise<Record<string, { container: string; restarts: number }>> {
  const states: Record<string, { container: string; restarts: number }> = {};
  for (const c of COMPONENTS) {
    const pod = halo.cluster.podsOf(`halo-${c}`)[0]!;
    const restarts = Number((await podman(['inspect', '--format', '{{.RestartCount}}', pod.container])).stdout.trim());
    states[`halo-${c}`] = { container: pod.container, restarts };
  }
  return states;
}
