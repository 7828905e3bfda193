import { randomBytes, randomInt } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { signAccessToken } from '@halo/kit/auth';
import { DEV_OIDC_PORT, GATEWAY_METRICS_PORT, GATEWAY_PORT, SERVICE_NAMES, SERVICES } from '@halo/kit/config';
import { dropSchema, portIsFree, TEST_JWT_SECRET, throwawaySchema } from '@halo/kit/testing';
import { startSystem, type LaunchOptions, type RunningSystem } from '../tools/src/launcher';

/**
 * Starts the real, built system (`npm run build` first) as separate processes — the same
 * launcher as `npm start` — with every port the OS's choice (`ports: 'auto'`), so it runs beside a
 * dev instance, other suites and another test run; the returned system says where everything
 * listens (`url`, `direct(name)`, `system.services`, `gatewayMetricsUrl`). By default it runs exactly as `npm start` does: one embedded PostgreSQL (in a
 * temporary directory unless `dataDir` is given) with a role per service. `postgres: true` runs
 * it as production does instead: DATABASE_URL = the machine's server, throwaway schemas.
 * `extraChatReplica: true` starts a second chat process (its own free port, the same database,
 * schema, REDIS_URL and keys) to prove cross-replica subscriptions: chat's REDIS_URL defaults to
 * the test Redis then, and `chatReplicaUrl` is its address.
 *
 * Redis is shared by every system of every run on the machine, so each system's keys and channels
 * are its own: a service's namespace follows its schema (`halo:<schema>:`), the throwaway schema's
 * with `postgres: true`; the gateway's (REDIS_KEY_PREFIX) is made for this system unless given. In
 * the embedded mode a service's schema is its name: a service given REDIS_URL there is refused.
 * Returns the system and a cleanup that stops it and removes what it made.
 */
export async function startE2ESystem(
  opts: {
    /**
     * Only for a test of what HALO_PORT_OFFSET names (`npm run restart`): the fixed ports at this
     * offset (take one from `freeOffset()`) instead of the OS's.
     */
    portOffset?: number;
    postgres?: boolean;
    dataDir?: string;
    devOidc?: boolean;
    restart?: LaunchOptions['restart'];
    envFor?: LaunchOptions['envFor'];
    extraChatReplica?: boolean;
    /** Called with the addresses chosen for the system, before any process starts (LaunchOptions). */
    onStarting?: LaunchOptions['onStarting'];
  } = {},
) {
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
  envFor.gateway = { REDIS_KEY_PREFIX: `halo:e2e-${randomBytes(4).toString('hex')}:gateway:` };
  for (const [name, env] of Object.entries(opts.envFor ?? {}) as [keyof typeof envFor, Record<string, string | undefined>][]) {
    envFor[name] = { ...envFor[name], ...env };
  }
  const shared = SERVICE_NAMES.filter((name) => envFor[name]?.REDIS_URL);
  if (!opts.postgres && shared.length) {
    throw new Error(
      `${shared.join(', ')}: in the embedded mode its Redis namespace (halo:<service>:) is every system's; use postgres: true`,
    );
  }
  const logs: string[] = [];
  const dropAll = async () => {
    if (opts.postgres) for (const schema of Object.values(schemas)) await dropSchema(schema);
    if (ownDir) rmSync(ownDir, { recursive: true, force: true });
  };
  const system: RunningSystem = await startSystem({
    ...(opts.portOffset === undefined ? { ports: 'auto' as const } : { portOffset: opts.portOffset }),
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
    ...(opts.onStarting ? { onStarting: opts.onStarting } : {}),
  }).catch(async (err: unknown) => {
    // The processes may have created their schemas before one of them failed.
    await dropAll();
    throw new Error(`${(err as Error).message}\n${logs.slice(-30).join('\n')}`);
  });
  return {
    system,
    url: system.gatewayUrl,
    /** The gateway's Prometheus metrics (its METRICS_PORT), never on its public port. */
    gatewayMetricsUrl: system.gatewayMetricsUrl,
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

/** The lowest port the OS hands out for `listen(0)` and outgoing connections (Linux's default elsewhere). */
function ephemeralLow(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32768;
  } catch {
    return 32768;
  }
}

/**
 * For the tests of what HALO_PORT_OFFSET names (`npm start`, `npm run restart`): an offset taken at
 * random whose every port is free now and below the range the OS hands out, so that no system on the
 * OS's ports is ever given one of them; a test run beside this one picks the same offset only by rare
 * chance, and then one of them fails with "Ports already in use".
 */
export async function freeOffset(): Promise<number> {
  const fixed = [
    GATEWAY_PORT,
    GATEWAY_METRICS_PORT,
    DEV_OIDC_PORT,
    ...SERVICE_NAMES.flatMap((n) => [SERVICES[n].httpPort, SERVICES[n].grpcPort]),
  ];
  // Far above the defaults (a developer's npm start), and its highest port below the OS's range.
  const lowest = 10_000;
  const highest = Math.max(lowest + 1_000, ephemeralLow() - Math.max(...fixed) - 1);
  for (let tries = 0; tries < 50; tries++) {
    const offset = lowest + 10 * randomInt(Math.floor((highest - lowest) / 10));
    const free = await Promise.all(fixed.map((port) => portIsFree(port + offset)));
    if (free.every(Boolean)) return offset;
  }
  throw new Error('no port offset with every port free');
}
