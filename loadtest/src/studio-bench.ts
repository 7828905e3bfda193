import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { resolve } from 'node:path';
import { openDb, type Db } from '@halo/kit/db';
import { dropSchema, freePort, TEST_DATABASE_URL, testIdentityEnv, throwawaySchema } from '@halo/kit/testing';
import { mergeSection } from './benchmarks-doc';

/**
 * `npm run bench:studio`: what the registry's read endpoints for its web UI (Studio) cost on a
 * month of usage. Starts the built registry (services/registry/dist/main.js, NODE_ENV=production,
 * HALO_ENV=development so a loopback caller reads without credentials) on a throwaway schema of
 * the machine's PostgreSQL (DATABASE_URL, else the tests' TEST_DATABASE_URL), seeds in SQL
 * BENCH_DAYS (30) days × 24 hours of usage over 500 schema fields (BENCH_OPERATIONS operations,
 * each used by every client version, a few of them with a coordinate list that varies by hour as
 * enum values from variables make it) and BENCH_CHECKS recorded checks, then times each GET
 * endpoint (BENCH_REQUESTS = 20 requests after 2 warm-ups; median and max, as the client sees
 * them over loopback) and writes the "Studio data endpoints" section of docs/benchmarks.md. The
 * usage is vacuumed before timing, as autovacuum leaves it (the endpoints read a covering index);
 * one endpoint is also timed before. For comparison it times, in SQL, the per-coordinate totals
 * computed two ways the registry avoids (every row's coordinates unnested; rows grouped on the
 * coordinate lists themselves).
 */
const ROOT = resolve(__dirname, '../..');
const OUT = resolve(ROOT, 'docs/benchmarks.md');
const DAYS = Number(process.env.BENCH_DAYS ?? 30);
const OPERATIONS = Number(process.env.BENCH_OPERATIONS ?? 12);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 20);
const CHECKS = Number(process.env.BENCH_CHECKS ?? 2_000);
const TYPES = 50;
const FIELDS_PER_TYPE = 10;
const CLIENTS: [string, string][] = [
  ['ios-app', '2.3.1'],
  ['ios-app', '2.3.0'],
  ['android-app', '5.0.2'],
  ['android-app', '4.9.0'],
  ['web', ''],
  ['@halo/client', '0.1.0'],
  ['partner-api', '1.2.0'],
  ['k6', ''],
];
const DATABASE_URL = process.env.DATABASE_URL ?? TEST_DATABASE_URL;
const log = (line: string) => process.stderr.write(`${line}\n`);
const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const median = (xs: number[]) => sorted(xs)[Math.ceil(xs.length / 2) - 1] ?? NaN;

/**
 * Operation i selects a window of fields across types (every field is some operation's, several
 * are many operations'), the types it touches, and its root field; the even ones also send an
 * enum value through a variable in even hours (a second coordinate list).
 */
function operations(): { hash: string; name: string; body: string; coordinates: string[]; variant: string[] | null }[] {
  const all = Array.from({ length: TYPES * FIELDS_PER_TYPE }, (_, k) => `T${Math.floor(k / FIELDS_PER_TYPE)}.f${k % FIELDS_PER_TYPE}`);
  const width = Math.ceil((all.length * 2) / OPERATIONS);
  return Array.from({ length: OPERATIONS }, (_, i) => {
    const fields = Array.from({ length: width }, (_, j) => all[(i * Math.floor(all.length / OPERATIONS) + j) % all.length]!);
    const types = [...new Set(fields.map((f) => f.split('.')[0]!))];
    const coordinates = [...new Set(['Query', `Query.op${i}`, `Query.op${i}.id`, ...types, ...fields])].sort();
    return {
      hash: `bench-op-${i}`,
      name: `Operation${i}`,
      body: `query Operation${i}($id: ID!) { op${i}(id: $id) { ${fields.join(' ')} } }`,
      coordinates,
      variant: i % 2 === 0 ? [...coordinates, 'Sort', 'Sort.PRICE'].sort() : null,
    };
  });
}

async function seed(db: Db): Promise<number> {
  await db.query(
    `INSERT INTO usage_hourly
       (hour, operation_hash, client, client_version, operation_name, operation_body, coordinates, count, last_seen, cost_sum, cost_requests)
     SELECT h, o.hash, c.client, c.version, o.name, o.body,
            CASE WHEN o.variant IS NOT NULL AND extract(hour FROM h)::integer % 2 = 0 THEN o.variant ELSE o.coordinates END,
            r.n, h + interval '59 minutes', r.n * r.each, r.n
       FROM generate_series(date_trunc('hour', now()) - make_interval(hours => $3::integer * 24 - 1), date_trunc('hour', now()), interval '1 hour') h,
            json_to_recordset($1::json) AS o(hash text, name text, body text, coordinates text[], variant text[]),
            json_to_recordset($2::json) AS c(client text, version text),
            -- Per row (it names the row): a count, and an estimated cost per request.
            LATERAL (SELECT 1 + floor(random() * 200)::bigint AS n, 1 + floor(random() * 50) AS each WHERE c.client IS NOT NULL) r`,
    [JSON.stringify(operations()), JSON.stringify(CLIENTS.map(([client, version]) => ({ client, version }))), DAYS],
  );
  await db.exec('ANALYZE usage_hourly');
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::integer AS n FROM usage_hourly');
  return rows[0]!.n;
}

/** What autovacuum does to a month of usage soon after it is written: the visibility map index-only scans rely on. */
async function vacuum(db: Db): Promise<void> {
  await db.exec('VACUUM ANALYZE usage_hourly');
}

/** Recorded checks over the window: copies of one real refused check's report, of several services. */
async function seedChecks(db: Db, base: string): Promise<void> {
  const res = await fetch(`${base}/v1/check`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ contract: await currentContract(base, 'catalog') }),
  });
  if (res.status !== 200) throw new Error(`check answered ${res.status}: ${await res.text()}`);
  await db.query(
    `INSERT INTO checks (service, kind, author, ok, outcome, report, version, created_at)
     SELECT (ARRAY['catalog','content','auth','chat','payments'])[1 + i % 5], (ARRAY['check','publish','rollback'])[1 + i % 3],
            'service:bench', i % 4 <> 0, CASE WHEN i % 4 = 0 THEN 'refused' ELSE 'passed' END, c.report, NULL,
            now() - make_interval(mins => i * ($2::integer * 1440 / $1::integer))
       FROM generate_series(1, $1::integer) i, (SELECT report FROM checks LIMIT 1) c`,
    [CHECKS, DAYS],
  );
  await db.exec('ANALYZE checks');
}

/** The service's current contract, with one field removed (a breaking change a check reports). */
async function currentContract(base: string, service: string): Promise<unknown> {
  const list = (await (await fetch(`${base}/v1/services`)).json()) as { services: { service: string; version: number }[] };
  const v = list.services.find((s) => s.service === service)!;
  const { contract } = (await (await fetch(`${base}/v1/services/${service}/versions/${v.version}`)).json()) as {
    contract: { sdl: string };
  };
  return { ...contract, sdl: contract.sdl.replace(/\n\s*description: String!/, '') };
}

async function time(base: string, path: string): Promise<{ path: string; median: number; max: number; bytes: number }> {
  const once = async () => {
    const started = performance.now();
    const res = await fetch(`${base}${path}`);
    const body = await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${Buffer.from(body).toString('utf8').slice(0, 300)}`);
    return { ms: performance.now() - started, bytes: body.byteLength };
  };
  for (let i = 0; i < 2; i++) await once();
  const runs = [];
  for (let i = 0; i < REQUESTS; i++) runs.push(await once());
  const ms = runs.map((r) => r.ms);
  return { path, median: median(ms), max: Math.max(...ms), bytes: runs[0]!.bytes };
}

/**
 * The same totals as /v1/usage/coordinates computed the ways the registry does not (5 runs each):
 * every hourly row's coordinates unnested, and rows grouped on the coordinate lists themselves
 * (not on their hash), which sorts or hashes a ~1 KiB array per row.
 */
async function slowerCoordinates(db: Db): Promise<{ naive: Timing; byList: Timing }> {
  const timed = async (sql: string): Promise<Timing> => {
    const ms: number[] = [];
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      await db.query(sql, [DAYS]);
      ms.push(performance.now() - started);
    }
    return { median: median(ms), max: Math.max(...ms) };
  };
  const since = 'hour >= now() - make_interval(days => $1::integer)';
  return {
    naive: await timed(`SELECT c, sum(count), count(DISTINCT client) FROM usage_hourly, unnest(coordinates) c WHERE ${since} GROUP BY c`),
    byList: await timed(
      `WITH lists AS (SELECT client, coordinates, sum(count) AS n FROM usage_hourly WHERE ${since} GROUP BY client, coordinates)
       SELECT c, sum(n), count(DISTINCT client) FROM lists, unnest(coordinates) c GROUP BY c`,
    ),
  };
}

interface Timing {
  median: number;
  max: number;
}

async function startRegistry(schema: string): Promise<{ child: ChildProcess; base: string }> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [resolve(ROOT, 'services/registry/dist/main.js')], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'production',
      HALO_ENV: 'development',
      LOG_LEVEL: 'warn',
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: String(port),
      GRPC_PORT: '0',
      DATABASE_URL,
      DB_SCHEMA: schema,
      AUTH_GRPC_ADDR: '127.0.0.1:9',
      REGISTRY_USAGE_RETENTION_DAYS: String(Math.max(30, DAYS)),
      ...testIdentityEnv('registry'),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (let i = 0; i < 300; i++) {
    if (
      await fetch(`${base}/readyz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { child, base };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGTERM');
  throw new Error('the registry did not become ready');
}

function render(
  rows: Awaited<ReturnType<typeof time>>[],
  usageRows: number,
  cold: Awaited<ReturnType<typeof time>>,
  slower: { naive: Timing; byList: Timing },
): string {
  const ms = (x: number) => `${x.toFixed(1)} ms`;
  const kb = (b: number) => (b >= 1024 ? `${(b / 1024).toFixed(1)} KiB` : `${b} B`);
  return [
    '## Studio data endpoints',
    '',
    `\`npm run bench:studio\` (loadtest/src/studio-bench.ts), ${new Date().toISOString().slice(0, 10)}, ${cpus().length} CPUs (${cpus()[0]?.model.trim()}), ` +
      `the machine's PostgreSQL, registry NODE_ENV=production. Seeded: ${DAYS} days × 24 hours of usage over ${TYPES * FIELDS_PER_TYPE} fields ` +
      `(${TYPES} types × ${FIELDS_PER_TYPE}), ${OPERATIONS} operations × ${CLIENTS.length} client versions, every hour: ${usageRows.toLocaleString('en')} rows of ` +
      `\`usage_hourly\`, about ${Math.ceil((TYPES * FIELDS_PER_TYPE * 2) / OPERATIONS)} fields each (half of the operations with a second coordinate list in even hours), and ${CHECKS} recorded checks. ` +
      `Each endpoint asked ${REQUESTS} times after 2 warm-ups, one at a time, over loopback (time to the last byte). Goal: well under 200 ms.`,
    '',
    '| endpoint | median | max | answer |',
    '|---|---|---|---|',
    ...rows.map((r) => `| \`GET ${r.path}\` | ${ms(r.median)} | ${ms(r.max)} | ${kb(r.bytes)} |`),
    '',
    `The usage endpoints read the window from one covering index (migrations/0006_usage_reads.sql), so they rely on the visibility`,
    `map autovacuum keeps; the table above is after \`VACUUM\`. Right after the bulk load, before any vacuum, \`GET ${cold.path}\` took`,
    `${ms(cold.median)} median, ${ms(cold.max)} max. The same ${DAYS}-day per-coordinate totals computed in SQL the ways the registry does not (5 runs`,
    `each): every hourly row's coordinates unnested, ${ms(slower.naive.median)} median (${ms(slower.naive.max)} max); rows grouped on the coordinate lists themselves`,
    `rather than on their hash, ${ms(slower.byList.median)} median (${ms(slower.byList.max)} max).`,
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  if (!existsSync(resolve(ROOT, 'services/registry/dist/main.js'))) throw new Error('build first: npm run build');
  const schema = throwawaySchema('bench_studio');
  let registry: { child: ChildProcess; base: string } | undefined;
  const db = await openDb({ url: DATABASE_URL, schema, poolSize: 2 });
  try {
    registry = await startRegistry(schema);
    const { base } = registry;
    log(`bench:studio: registry at ${base}, schema ${schema}; seeding ${DAYS} days of usage…`);
    const usageRows = await seed(db);
    const cold = await time(base, `/v1/usage/coordinates?days=${DAYS}`);
    log(`bench:studio: before VACUUM, GET ${cold.path}: median ${cold.median.toFixed(1)} ms, max ${cold.max.toFixed(1)} ms`);
    await vacuum(db);
    await seedChecks(db, base);
    const { rows } = await db.query<{ id: number }>('SELECT max(id)::integer AS id FROM checks');
    log(`bench:studio: ${usageRows} usage rows, ${CHECKS + 1} checks; timing…`);
    const paths = [
      '/v1/checks',
      '/v1/checks?service=catalog&limit=200',
      `/v1/checks/${rows[0]!.id}`,
      '/v1/usage/coordinates',
      `/v1/usage/coordinates?days=${DAYS}`,
      '/v1/usage/series?coordinate=T7.f3',
      `/v1/usage/series?coordinate=T7.f3&days=${DAYS}`,
      `/v1/usage/series?coordinate=Query&days=${DAYS}`,
      '/v1/usage/operations',
      `/v1/usage/operations?days=${DAYS}&limit=200`,
      `/v1/usage/operations?days=${DAYS}&limit=200&by=cost`,
      `/v1/usage/operations?days=${DAYS}&limit=200&by=totalCost`,
      '/v1/usage/clients',
      `/v1/usage/clients?days=${DAYS}`,
    ];
    const results = [];
    for (const path of paths) {
      const r = await time(base, path);
      results.push(r);
      log(`bench:studio: GET ${path}: median ${r.median.toFixed(1)} ms, max ${r.max.toFixed(1)} ms`);
    }
    const slower = await slowerCoordinates(db);
    const section = render(results, usageRows, cold, slower);
    process.stdout.write(`${section}\n`);
    const doc = existsSync(OUT) ? readFileSync(OUT, 'utf8') : '';
    writeFileSync(OUT, mergeSection(doc, 'studio', section));
    log(`bench:studio: wrote its section of ${OUT}`);
  } finally {
    if (registry && registry.child.exitCode === null) {
      registry.child.kill('SIGTERM');
      await new Promise((r) => registry!.child.once('exit', r));
    }
    await db.close();
    await dropSchema(schema, DATABASE_URL);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:studio failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
