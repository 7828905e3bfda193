import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GATEWAY_METRICS_PORT, signAccessToken } from '@halo/kit';
import { dropSchema, TEST_JWT_SECRET, throwawaySchema } from '@halo/kit/testing';
import { startSystem, type LaunchOptions, type RunningSystem } from '../tools/src/launcher';

/**
 * Starts the real, built system (`npm run build` first) as separate processes — the same
 * launcher as `npm start` — on ports offset from the defaults so it can run beside a dev
 * instance. By default it runs exactly as `npm start` does: one embedded PostgreSQL (in a
 * temporary directory unless `dataDir` is given) with a role per service. `postgres: true` runs
 * it as production does instead: DATABASE_URL = the machine's server, throwaway schemas.
 * `extraChatReplica: true` starts a second chat process (its own free port, the same database,
 * schema, REDIS_URL and keys) to prove cross-replica subscriptions: chat's REDIS_URL defaults to
 * the test Redis then, and `chatReplicaUrl` is its address. chat's Redis namespace follows its
 * schema (`halo:<schema>:`): with `postgres: true` it is the throwaway schema's, unique per run;
 * in the embedded mode it is always `halo:chat:`, shared by every system on that Redis.
 * Returns the system and a cleanup that stops it and removes what it made.
 */
export async function startE2ESystem(opts: {
  portOffset: number;
  postgres?: boolean;
  dataDir?: string;
  devOidc?: boolean;
  restart?: LaunchOptions['restart'];
  envFor?: LaunchOptions['envFor'];
  extraChatReplica?: boolean;
}) {
  const ownDir = !opts.postgres && !opts.dataDir ? mkdtempSync(join(tmpdir(), 'halo-e2e-')) : undefined;
  // Run as root, the embedded PostgreSQL runs as user postgres, which must reach its data directory.
  if (ownDir) chmodSync(ownDir, 0o755);
  const dataDir = opts.dataDir ?? ownDir;
  const schemas = {
    content: throwawaySchema('e2e_content'),
    auth: throwawaySchema('e2e_auth'),
    catalog: throwawaySchema('e2e_catalog'),
    payments: throwawaySchema('e2e_payments'),
    chat: throwawaySchema('e2e_chat'),
    registry: throwawaySchema('e2e_registry'),
  };
  // Each process's own settings on top of its throwaway schema (merged per process, not replaced).
  const envFor: NonNullable<LaunchOptions['envFor']> = opts.postgres
    ? Object.fromEntries(Object.entries(schemas).map(([name, schema]) => [name, { DB_SCHEMA: schema }]))
    : {};
  // Two chat processes must share a pub/sub: Redis, unless the caller names one.
  if (opts.extraChatReplica) envFor.chat = { ...envFor.chat, REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379' };
  for (const [name, env] of Object.entries(opts.envFor ?? {}) as [keyof typeof envFor, Record<string, string | undefined>][]) {
    envFor[name] = { ...envFor[name], ...env };
  }
  const logs: string[] = [];
  const dropAll = async () => {
    if (opts.postgres) for (const schema of Object.values(schemas)) await dropSchema(schema);
    if (ownDir) rmSync(ownDir, { recursive: true, force: true });
  };
  const system: RunningSystem = await startSystem({
    portOffset: opts.portOffset,
    devOidc: opts.devOidc ?? false,
    env: {
      HALO_ENV: 'test',
      LOG_LEVEL: 'warn',
      SEED_DEMO_DATA: 'true',
      JWT_SECRET: TEST_JWT_SECRET,
      // Suites register many users from one address (loopback); a test of the limit sets its own.
      REGISTER_MAX_PER_IP: '100000',
      ...(opts.postgres
        ? { DATABASE_URL: process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test' }
        : { DATABASE_URL: '' }),
    },
    ...(dataDir ? { postgresDataDir: join(dataDir, 'postgres') } : {}),
    envFor,
    ...(opts.restart ? { restart: opts.restart } : {}),
    ...(opts.extraChatReplica ? { replicas: { chat: 2 } } : {}),
    onLog: (name, line) => logs.push(`${name}| ${line}`),
  }).catch(async (err: unknown) => {
    // The processes may have created their schemas before one of them failed.
    await dropAll();
    throw new Error(`${(err as Error).message}\n${logs.slice(-30).join('\n')}`);
  });
  return {
    system,
    url: system.gatewayUrl,
    /** The gateway's Prometheus metrics (METRICS_PORT, offset like every port), never on its public one. */
    gatewayMetricsUrl: `http://127.0.0.1:${GATEWAY_METRICS_PORT + opts.portOffset}/metrics`,
    /** A process's own address (the first one of a service started with replicas). */
    direct: (name: string) => system.processes.find((p) => p.name === name && !p.replica)!.url,
    /** With `extraChatReplica`: the second chat process's address (same schema and Redis as `direct('chat')`). */
    chatReplicaUrl: system.processes.find((p) => p.name === 'chat' && p.replica === 1)?.url,
    logs,
    /** The throwaway schemas (used with `postgres: true`). */
    schemas,
    async stop() {
      await system.stop();
      await dropAll();
    },
  };
}

export async function gql(url: string, query: string, variables?: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as { data?: any; errors?: any[] } };
}

/** `Authorization` header with a token signed by the system's secret, as auth would issue it. */
export function bearer(sub: string, name: string, role: 'user' | 'admin'): Record<string, string> {
  return { authorization: `Bearer ${signAccessToken({ sub, name, role }, TEST_JWT_SECRET, 300)}` };
}

/** One unlabelled series' value from a Prometheus `/metrics` page (`name value`), NaN if absent. */
export async function metricValue(metricsUrl: string, name: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line ? Number(line.split(' ').pop()) : NaN;
}

/**
 * Polls `check` until it gives a truthy value (a thrown error counts as not yet), every 100 ms, and
 * returns it; throws naming `what` after `timeoutMs`. For what a running system does on its own time
 * (a poll, a flush): assert the outcome, never the time it took.
 */
export async function until<T>(what: string, check: () => Promise<T | null | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => null);
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
