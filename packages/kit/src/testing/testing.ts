import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { importJWK, SignJWT } from 'jose';
import pg from 'pg';
import { openDb, type Db } from '../db/db';
import type { DefinedService, RunningService } from '../service/definition';
import { createLogger, type Logger } from '../logging/logger';
import { serviceIdentityFor, type ServiceIdentity } from '../auth/service-identity';
import { generateServiceKey, type ServiceKeyPair } from '../auth/service-keys';
import { SERVICE_NAMES, trustedCallersOf, type ServiceName } from '../config/topology';

/** Where the tests look for PostgreSQL unless TEST_DATABASE_URL says otherwise. */
export const DEFAULT_TEST_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';

/**
 * The real Postgres used by the test suites: the machine's, or one Jest's global setup started for
 * the run when nothing answers there (tools/jest/test-servers.ts; docs/testing.md).
 */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? DEFAULT_TEST_DATABASE_URL;

/** A dev-only signing secret for tests; never used outside them. */
export const TEST_JWT_SECRET = 'test-only-secret-0123456789abcdef0123456789abcdef';

/** A throwaway schema name for one test file. */
export function throwawaySchema(prefix: string): string {
  return `t_${prefix}_${randomBytes(4).toString('hex')}`;
}

/**
 * Opens the real test Postgres on a schema of its own; `drop()` removes the schema and closes
 * the pool, so parallel test files never see each other's rows.
 */
export async function openTestDb(prefix: string): Promise<Db & { drop(): Promise<void> }> {
  const schema = throwawaySchema(prefix);
  const db = await openDb({ url: TEST_DATABASE_URL, schema, poolSize: 4 });
  return Object.assign(db, {
    async drop() {
      await db.close();
      await dropSchema(schema);
    },
  });
}

export async function dropSchema(schema: string, url: string = TEST_DATABASE_URL): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

export type TestDb = Db & { drop(): Promise<void> };

/** The kit's logger (request ids included) whose lines are kept, so tests can assert on what was logged. */
export function capturingLogger(level = 'info', name = 'test') {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger(name, level, stream), lines };
}

/**
 * A minimal browser for driving redirect flows in tests (OAuth, cookies): a cookie jar per origin,
 * manual redirects, form posts.
 */
export class TestBrowser {
  readonly jar = new Map<string, Map<string, string>>();

  async request(url: string, form?: Record<string, string>): Promise<Response> {
    const u = new URL(url);
    const jar = this.jar.get(u.origin) ?? new Map<string, string>();
    this.jar.set(u.origin, jar);
    const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await fetch(u, {
      method: form ? 'POST' : 'GET',
      redirect: 'manual',
      headers: { ...(cookie ? { cookie } : {}), ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      ...(form ? { body: new URLSearchParams(form).toString() } : {}),
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair = '', ...attrs] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      if (attrs.some((a) => /^\s*max-age=0\s*$/i.test(a) || /^\s*expires=Thu, 01 Jan 1970/i.test(a))) jar.delete(name);
      else jar.set(name, pair.slice(eq + 1).trim());
    }
    return res;
  }

  /** Follows redirects while they stay on `origin`; returns the last response and where it points. */
  async follow(url: string, origin: string): Promise<{ res: Response; url: string }> {
    let res = await this.request(url);
    for (let hops = 0; hops < 10 && res.status >= 300 && res.status < 400; hops++) {
      const next = new URL(res.headers.get('location')!, url).href;
      if (new URL(next).origin !== origin) return { res, url: next };
      url = next;
      res = await this.request(url);
    }
    return { res, url };
  }
}

/** The environment every in-process test service starts with (ports chosen by the OS). */
export const TEST_SERVICE_ENV: Readonly<Record<string, string>> = Object.freeze({
  HALO_ENV: 'test',
  HTTP_PORT: '0',
  GRPC_PORT: '0',
  HTTP_HOST: '127.0.0.1',
  LOG_LEVEL: 'silent',
  JWT_SECRET: TEST_JWT_SECRET,
  DATABASE_URL: TEST_DATABASE_URL,
});

/** Test-only Ed25519 keys, fresh in every test file: one per process of the topology. */
export const TEST_SERVICE_KEYS: Readonly<Record<ServiceName | 'gateway', ServiceKeyPair>> = Object.freeze(
  Object.fromEntries((['gateway', ...SERVICE_NAMES] as const).map((name) => [name, generateServiceKey(name, 'test')])) as Record<
    ServiceName | 'gateway',
    ServiceKeyPair
  >,
);

/**
 * What the launcher gives `name` (docs/service-identity.md), with the test keys: its own signing
 * key, and the public keys of exactly the processes that call it (gRPC, or a service token over HTTP).
 */
export function testIdentityEnv(name: ServiceName | 'gateway'): { SERVICE_SIGNING_KEY: string; SERVICE_TRUSTED_KEYS?: string } {
  const callers = name === 'gateway' ? [] : trustedCallersOf(name);
  return {
    SERVICE_SIGNING_KEY: JSON.stringify(TEST_SERVICE_KEYS[name].privateJwk),
    ...(callers.length ? { SERVICE_TRUSTED_KEYS: JSON.stringify({ keys: callers.map((c) => TEST_SERVICE_KEYS[c].publicJwk) }) } : {}),
  };
}

/**
 * A service token made by hand, for tests that present what a real client never would: another
 * audience, an expired one, a key speaking for another service. `expiresIn` < 0 makes it expired.
 */
export async function signServiceToken(pair: ServiceKeyPair, claims: { iss: string; aud: string; expiresIn?: number }): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const expiresIn = claims.expiresIn ?? 60;
  return new SignJWT({})
    .setProtectedHeader({ alg: 'EdDSA', kid: pair.privateJwk.kid })
    .setIssuer(claims.iss)
    .setAudience(claims.aud)
    .setIssuedAt(expiresIn < 0 ? now - 300 : now)
    .setExpirationTime(now + expiresIn)
    .setJti(randomBytes(8).toString('hex'))
    .sign(await importJWK(pair.privateJwk, 'EdDSA'));
}

/** `name`'s identity as the launcher would configure it, with the test keys. */
export const testIdentity = (name: ServiceName | 'gateway'): ServiceIdentity => serviceIdentityFor(name, testIdentityEnv(name));

export interface TestService<S> {
  db: TestDb;
  service: S;
  logger: Logger;
  /** `http://127.0.0.1:<port>` of the running REST + GraphQL server. */
  base: string;
  /** Stops the service, then drops the file's schema. */
  close(): Promise<void>;
}

/** A real service, in-process, on a throwaway Postgres schema of its own (one per test file). */
export async function startTestService<C, D>(
  definition: DefinedService<C, D>,
  env: Record<string, string> = {},
): Promise<TestService<RunningService<D>>> {
  const config = definition.loadConfig({ ...TEST_SERVICE_ENV, ...testIdentityEnv(definition.name), ...env });
  const logger = createLogger(definition.name, 'silent');
  const db = await openTestDb(definition.name);
  let service: RunningService<D>;
  try {
    service = await definition.start(config, logger, { db });
  } catch (err) {
    await db.drop();
    throw err;
  }
  return {
    db,
    service,
    logger,
    base: `http://127.0.0.1:${service.httpPort}`,
    async close() {
      try {
        await service.stop();
      } finally {
        await db.drop();
      }
    },
  };
}

export interface GraphQLBody<D = Record<string, unknown>> {
  data?: D | null;
  errors?: { message: string; path?: (string | number)[]; extensions?: { code?: string } & Record<string, unknown> }[];
}

/**
 * POSTs one GraphQL operation as JSON, the way the gateway calls a subgraph. `data` defaults to
 * `any` because every query has its own shape and the tests assert that shape themselves.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above: each test asserts its own shape
export async function postGraphQL<D = Record<string, any>>(
  base: string,
  query: string,
  variables?: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: GraphQLBody<D> }> {
  const res = await fetch(`${base}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as GraphQLBody<D> };
}

/**
 * The demo-seed rule (kit: loadServiceConfig) as a table, for the kit's test and any service's:
 * HALO_ENV, SEED_DEMO_DATA → whether demo data is seeded.
 */
export const SEED_RULE_CASES: readonly [haloEnv: string | undefined, seed: string | undefined, seeded: boolean][] = [
  ['development', undefined, true],
  ['test', undefined, false],
  ['production', undefined, false],
  [undefined, undefined, false], // HALO_ENV defaults to production
  ['development', 'false', false],
  ['development', '', true], // empty means "not set"
  ['test', 'true', true],
  ['production', 'false', false],
];

/** A fixed clock for created_at values, so ordering never depends on when a test runs. */
export const minutesAfter = (minutes: number, base = '2025-06-01T12:00:00.000Z') =>
  new Date(Date.parse(base) + minutes * 60_000).toISOString();

/** The thrown error's message, or null when `fn` does not throw (parity tests of schemas and rules). */
export function messageOf(fn: () => unknown): string | null {
  try {
    fn();
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

/** `it.each` rows labelled by their JSON (`undefined` spelled out). */
export const labelled = (xs: unknown[]): [string, unknown][] => xs.map((x) => [JSON.stringify(x) ?? 'undefined', x]);

/** One REST call as a client makes it: JSON body if any; the raw text is kept (replays are compared byte for byte) and parsed. */
export async function callRest(
  base: string,
  method: string,
  path: string,
  init: { body?: unknown; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { ...init.headers };
  let body: string | undefined;
  if (init.body !== undefined) {
    headers['content-type'] ??= 'application/json';
    body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
  }
  const res = await fetch(`${base}${path}`, { method, headers, body });
  const text = await res.text();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each test asserts the body's shape itself
  return { status: res.status, headers: res.headers, text, body: text ? (JSON.parse(text) as Record<string, any>) : undefined };
}

/** One sample of a Prometheus text exposition: `name{labels} value`. */
export interface MetricSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE_LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/;
const LABEL_PAIR = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/g;

/** The samples of a `/metrics` answer (Prometheus text format 0.0.4), comments skipped. */
export function parseMetrics(text: string): MetricSample[] {
  const samples: MetricSample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = SAMPLE_LINE.exec(line);
    if (!m) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, raw] of (m[2] ?? '').matchAll(LABEL_PAIR)) {
      labels[key!] = raw!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/**
 * The sum of the samples named `name` whose labels include `labels` (0 when there are none), e.g.
 * `metricValue(text, 'halo_http_request_duration_seconds_count', { route: '/posts/:id' })`.
 */
export function metricValue(text: string | MetricSample[], name: string, labels: Record<string, string> = {}): number {
  const samples = typeof text === 'string' ? parseMetrics(text) : text;
  let sum = 0;
  for (const s of samples) {
    if (s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)) sum += s.value;
  }
  return sum;
}

export { closedPort, freePort, freePorts, portIsFree } from '../launch/ports';
export { hasRedisServer, REDIS_MISSING, startRedisServer, type RedisServer } from './test-redis';

/** What a command printed, and how it ended. */
export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a Node script (a CLI under test) to its end, with only the environment given (and PATH). */
export function runNodeScript(
  script: string,
  args: readonly string[],
  opts: { cwd?: string; env?: Record<string, string> } = {},
): Promise<RunResult> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [script, ...args], {
      ...(opts.cwd ? { cwd: opts.cwd } : {}),
      env: { PATH: process.env.PATH, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}
