import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import WebSocket from 'ws';
import { buildASTSchema, type GraphQLFieldResolver } from 'graphql';
import { ConfigError, env } from '../config/config';
import { defineService } from './define-service';
import { loadPublishConfig, loadServiceConfig, publishOnlyRequested } from './service-config';
import { HALO_PLACEHOLDER } from '../config/dev-secrets';
import { signAccessToken } from '../auth/jwt';
import {
  dropSchema,
  openTestDb,
  postGraphQL,
  SEED_RULE_CASES,
  TEST_DATABASE_URL,
  TEST_JWT_SECRET,
  TEST_SERVICE_ENV,
  testIdentityEnv,
  type TestDb,
} from '../testing';
import { createLogger } from '../logging/logger';

/**
 * A whole (tiny) service declared with defineService, started for real on a throwaway schema. It
 * borrows catalog's name (a service must be one of the topology's), so it gets catalog's place in
 * the service-identity topology too: the test keys payments' calls are verified with.
 */
const ENV = { ...TEST_SERVICE_ENV, ...testIdentityEnv('catalog') };
const root = mkdtempSync(join(tmpdir(), 'halo-define-service-'));
mkdirSync(join(root, 'migrations'));
writeFileSync(
  join(root, 'migrations', '0001_init.sql'),
  'CREATE TABLE notes (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text NOT NULL);',
);
writeFileSync(join(root, 'schema.graphql'), 'type Query { notes: [String!]! whoami: String! }');

let healthy = true;
const notes = defineService({
  name: 'catalog',
  root,
  config: { GREETING: env.str('hello') },
  domain: ({ db, config }) => ({
    greeting: config.GREETING,
    list: async () => (await db.query<{ body: string }>('SELECT body FROM notes ORDER BY id')).rows.map((r) => r.body),
  }),
  seed: async ({ db, domain }) => {
    await db.query('INSERT INTO notes (body) VALUES ($1)', [`${domain.greeting} from the seed`]);
  },
  ready: async () => {
    if (!healthy) throw new Error('dependency down');
  },
  graphql: {
    schema: (typeDefs, domain) => {
      const schema = buildASTSchema(typeDefs);
      const fields = schema.getQueryType()!.getFields();
      fields.notes!.resolve = () => domain.list();
      const whoami: GraphQLFieldResolver<unknown, { greeting: string; requestId: string; caller: { name: string } | null }> = (
        _,
        __,
        ctx,
      ) => `${ctx.greeting} ${ctx.caller?.name ?? 'anonymous'} ${ctx.requestId}`;
      fields.whoami!.resolve = whoami as GraphQLFieldResolver<unknown, unknown>;
      return schema;
    },
    context: (domain) => ({ greeting: domain.greeting }),
  },
  rest: (domain) => express.Router().get('/notes', async (_req, res) => void res.json({ data: await domain.list() })),
});

let db: TestDb;
let started: Awaited<ReturnType<typeof notes.start>>;
let base: string;

beforeAll(async () => {
  db = await openTestDb('define_service');
  started = await notes.start(notes.loadConfig({ ...ENV, SEED_DEMO_DATA: 'true', GREETING: 'halo' }), createLogger('t', 'silent'), { db });
  base = `http://127.0.0.1:${started.httpPort}`;
});

afterAll(async () => {
  await started?.stop();
  await db?.drop();
  rmSync(root, { recursive: true, force: true });
});

describe('defineService', () => {
  it('migrates, seeds, and serves the REST routes over the domain', async () => {
    expect((await db.query('SELECT name FROM schema_migrations')).rows).toEqual([{ name: '0001_init.sql' }]);
    const res = await fetch(`${base}/notes`);
    expect(await res.json()).toEqual({ data: ['halo from the seed'] });
  });

  it('serves the schema file with the kit context (request id, verified caller) plus the service’s own', async () => {
    const token = signAccessToken({ sub: '5', name: 'Rina', role: 'user' }, TEST_JWT_SECRET, 60);
    const { body } = await postGraphQL(base, '{ notes whoami }', undefined, { authorization: `Bearer ${token}`, 'x-request-id': 'gql-1' });
    expect(body).toEqual({ data: { notes: ['halo from the seed'], whoami: 'halo Rina gql-1' } });
    const bad = await postGraphQL(base, '{ whoami }', undefined, { authorization: 'Bearer nope' });
    expect(bad.status).toBe(401);
  });

  it('answers health, readiness (database + the service’s check) and 404 the kit’s way', async () => {
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    healthy = false;
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    healthy = true;
    const missing = await fetch(`${base}/nope`);
    expect([missing.status, await missing.json()]).toEqual([404, { error: 'Not found' }]);
    expect(started.grpcPort).toBeGreaterThan(0);
  });

  it('serves Prometheus metrics at /metrics: requests by route template and status, the pool, the runtime', async () => {
    await fetch(`${base}/notes`);
    await fetch(`${base}/notes`);
    await fetch(`${base}/nope/123`);
    await fetch(`${base}/healthz`);
    await fetch(`${base}/readyz`);
    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    const count = (labels: string) =>
      Number(new RegExp(`^halo_http_request_duration_seconds_count\\{${labels}\\} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
    expect(count('service="catalog",method="GET",route="/notes",status="200"')).toBeGreaterThanOrEqual(2);
    // An unknown path is one label value, not one per path.
    expect(count('service="catalog",method="GET",route="unmatched",status="404"')).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain('/nope/123');
    // Probes (and scrapes) are not requests: nothing unmatched answered 200.
    expect(count('service="catalog",method="GET",route="unmatched",status="200"')).toBeNaN();
    expect(text).toMatch(/^halo_db_pool_connections\{state="total",service="catalog"\} \d+$/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds\{service="catalog"\} /m);
  });

  it('serves no WebSocket when the schema has no Subscription type', async () => {
    const ws = new WebSocket(`${base.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
    await expect(new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)))).rejects.toThrow();
  });

  it('leaves a given database open when it stops', async () => {
    const again = await notes.start(notes.loadConfig({ ...ENV }), createLogger('t', 'silent'), { db });
    await again.stop();
    await expect(db.ping()).resolves.toBeUndefined();
    // SEED_DEMO_DATA is off by default outside development: nothing was added.
    expect((await db.query('SELECT count(*) AS n FROM notes')).rows).toEqual([{ n: 1 }]);
  });

  it('closes what it opened when the domain fails to build', async () => {
    const schema = `t_define_fail_${process.pid}`;
    const closed: string[] = [];
    const broken = defineService({
      name: 'catalog',
      root,
      domain: ({ lifecycle }) => {
        lifecycle.register('a client the domain opened', () => void closed.push('client'));
        throw new Error('cannot build');
      },
    });
    const config = broken.loadConfig({ ...ENV, DATABASE_URL: TEST_DATABASE_URL, DB_SCHEMA: schema });
    try {
      await expect(broken.start(config, createLogger('t', 'silent'))).rejects.toThrow('cannot build');
      expect(closed).toEqual(['client']);
    } finally {
      await dropSchema(schema);
    }
  });
});

describe('loadServiceConfig: the demo-seed rule, once for every service', () => {
  const DB = 'postgres://svc@db:5432/halo';
  const load = (vars: Record<string, string | undefined>) =>
    loadServiceConfig('content', { EXTRA: env.int(3) }, { DATABASE_URL: DB, ...vars });

  it.each(SEED_RULE_CASES)('HALO_ENV=%s SEED_DEMO_DATA=%s → %s', (haloEnv, seed, expected) => {
    expect(load({ HALO_ENV: haloEnv, SEED_DEMO_DATA: seed }).SEED_DEMO_DATA).toBe(expected);
  });

  it('refuses SEED_DEMO_DATA=true in production, and a value that is not a boolean, naming the variable', () => {
    for (const vars of [
      { HALO_ENV: 'production', SEED_DEMO_DATA: '1' },
      { HALO_ENV: 'development', SEED_DEMO_DATA: 'yes' },
    ]) {
      expect(() => load(vars)).toThrow(ConfigError);
      expect(() => load(vars)).toThrow(/^Invalid configuration: SEED_DEMO_DATA: /);
    }
  });

  it('reads the kit’s variables with the service’s defaults, and the service’s own', () => {
    expect(load({})).toMatchObject({ HTTP_PORT: 4002, GRPC_PORT: 5002, DATABASE_URL: DB, EXTRA: 3 });
    expect(() => load({ EXTRA: 'x' })).toThrow(/^Invalid configuration: EXTRA: /);
    expect(() => loadServiceConfig('content', {}, {})).toThrow(/^Invalid configuration: DATABASE_URL: is required/);
  });
});

describe('loadServiceConfig: publishing the contract (docs/registry.md)', () => {
  const load = (vars: Record<string, string | undefined>) =>
    loadServiceConfig('content', {}, { DATABASE_URL: 'postgres://svc@db:5432/halo', ...vars });

  it('refuses REGISTRY_PUBLISH_ON_START when HALO_ENV=production: in a cluster the release hook publishes', () => {
    expect(() => load({ HALO_ENV: 'production', REGISTRY_PUBLISH_ON_START: 'true', REGISTRY_URL: 'http://registry:4006' })).toThrow(
      /^Invalid configuration: REGISTRY_PUBLISH_ON_START: refused when HALO_ENV=production/,
    );
    expect(
      load({ HALO_ENV: 'test', REGISTRY_PUBLISH_ON_START: 'true', REGISTRY_URL: 'http://registry:4006' }).REGISTRY_PUBLISH_ON_START,
    ).toBe(true);
  });

  it('needs REGISTRY_URL to publish, at start or as the one-shot', () => {
    expect(() => load({ HALO_ENV: 'test', REGISTRY_PUBLISH_ON_START: 'true' })).toThrow(
      /^Invalid configuration: REGISTRY_URL: is required with REGISTRY_PUBLISH_ON_START/,
    );
    expect(() => load({ HALO_PUBLISH_CONTRACT_ONLY: 'true' })).toThrow(
      /^Invalid configuration: REGISTRY_URL: is required with HALO_PUBLISH_CONTRACT_ONLY/,
    );
    expect(load({ HALO_PUBLISH_CONTRACT_ONLY: 'true', REGISTRY_URL: 'http://registry:4006' }).HALO_PUBLISH_CONTRACT_ONLY).toBe(true);
  });
});

describe('the publish hook’s own settings (HALO_PUBLISH_CONTRACT_ONLY: loadPublishConfig)', () => {
  const hook = { HALO_ENV: 'production', HALO_PUBLISH_CONTRACT_ONLY: 'true', REGISTRY_URL: 'http://registry:4006' };

  it('is asked for by the flag, read as a flag', () => {
    expect(publishOnlyRequested({ HALO_PUBLISH_CONTRACT_ONLY: 'true' })).toBe(true);
    expect(publishOnlyRequested({ HALO_PUBLISH_CONTRACT_ONLY: 'false' })).toBe(false);
    expect(publishOnlyRequested({})).toBe(false);
    expect(() => publishOnlyRequested({ HALO_PUBLISH_CONTRACT_ONLY: 'yes please' })).toThrow(
      /^Invalid configuration: HALO_PUBLISH_CONTRACT_ONLY/,
    );
  });

  it('needs no database, JWT secret or Redis, even where serving in production does (auth, payments)', () => {
    expect(() => loadServiceConfig('payments', {}, hook)).toThrow(/^Invalid configuration: DATABASE_URL: is required/);
    const config = loadPublishConfig('payments', { ...hook, SERVICE_PUBLIC_URL: 'http://payments.halo.svc:4004' });
    expect(config).toMatchObject({
      REGISTRY_URL: 'http://registry:4006',
      SERVICE_PUBLIC_URL: 'http://payments.halo.svc:4004',
      HTTP_PORT: 4004,
    });
    expect(loadPublishConfig('auth', hook).REGISTRY_URL).toBe('http://registry:4006');
  });

  it('still needs REGISTRY_URL, and still refuses a committed development secret in production', () => {
    expect(() => loadPublishConfig('catalog', { ...hook, REGISTRY_URL: undefined })).toThrow(
      /^Invalid configuration: REGISTRY_URL: is required with HALO_PUBLISH_CONTRACT_ONLY/,
    );
    expect(() => loadPublishConfig('catalog', { ...hook, SERVICE_SIGNING_KEY: HALO_PLACEHOLDER })).toThrow(/SERVICE_SIGNING_KEY/);
  });
});
