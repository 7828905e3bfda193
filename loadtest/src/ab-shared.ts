import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { answerOf, gqlInit, QUERIES, REST_PATHS, type LoadTarget } from './gateways-bench';
export { nodeFlagsOf } from './pin';

export { registerCallers } from './callers';
import type { Group } from './rounds';

/**
 * What the two A/B harnesses share (`npm run bench:ab`, src/ab-bench.ts, by throughput and CPU
 * time; `npm run bench:ab:instructions`, src/ab-instructions.ts, by instructions counted under
 * callgrind): the baseline checkout, the distinct callers, and the check that both gateways
 * answer every row with the same bytes before anything is measured.
 */
export type Side = 'after' | 'before';
export interface AbTarget extends LoadTarget {
  side: Side;
}
export interface Row extends Group<AbTarget> {
  title: string;
}

/** The ids BENCH_ROWS can name, in the order they run. */
const ROW_IDS = ['nested', 'me', 'nested-callers', 'flat', 'rest'] as const;

/**
 * The rows both harnesses measure, each with one target per gateway (`after` first), narrowed to
 * BENCH_ROWS when it is set (e.g. `rest`: one row for longer, tighter runs). `callers`: one per
 * connection, for the rows asked by distinct callers.
 */
export function abRows(
  gateways: { side: Side; label: string; url: string; pid: number }[],
  callers: { token: string }[],
  only: string | undefined = process.env.BENCH_ROWS,
): Row[] {
  const perCaller = callers.map((c) => ({ authorization: `Bearer ${c.token}` }));
  const row = (
    id: (typeof ROW_IDS)[number],
    title: string,
    target: (url: string) => Pick<LoadTarget, 'url' | 'init' | 'perConnection'>,
  ): Row => ({
    id,
    title,
    targets: gateways.map((g) => ({ id: `${id}:${g.side}`, label: g.label, side: g.side, cpuPid: g.pid, ...target(g.url) })),
  });
  const graphql = (query: string, perConnection?: Record<string, string>[]) => (url: string) => ({
    url: `${url}/graphql`,
    init: gqlInit(query),
    ...(perConnection ? { perConnection } : {}),
  });
  const all: Row[] = [
    row('nested', `anonymous nested \`${QUERIES.nested}\``, graphql(QUERIES.nested)),
    row(
      'me',
      `\`${QUERIES.me}\`, one caller per connection (${callers.length} distinct users, 5 orders each)`,
      graphql(QUERIES.me, perCaller),
    ),
    // The nested and flat queries asked by distinct callers, as gateways-bench's issue-30 rows ask them.
    row('nested-callers', `\`${QUERIES.nested}\`, one caller per connection`, graphql(QUERIES.nested, perCaller)),
    row('flat', `\`${QUERIES.flat}\`, one caller per connection`, graphql(QUERIES.flat, perCaller)),
    row('rest', `REST \`GET ${REST_PATHS.post}\` through the gateway`, (url) => ({
      url: `${url}${REST_PATHS.post}`,
      init: { method: 'GET' },
    })),
  ];
  if (only === undefined) return all;
  const wanted = only.split(',').map((s) => s.trim());
  const rows = all.filter((r) => wanted.includes(r.id));
  if (!rows.length) throw new Error(`BENCH_ROWS=${only}: no such row (${ROW_IDS.join(', ')})`);
  return rows;
}

/** `abc1234` (plus ` + uncommitted changes` when the work tree differs), or why not. */
export function revisionOf(dir: string): string {
  try {
    const head = execFileSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    const dirty = execFileSync('git', ['-C', dir, 'status', '--porcelain', '--untracked-files=no'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    return dirty ? `${head} + uncommitted changes` : head;
  } catch {
    return 'not a git checkout';
  }
}

export function baselineOrExit(): string {
  const raw = process.env.BENCH_BASELINE;
  const usage = 'usage: BENCH_BASELINE=/path/to/another/halo/checkout npm run bench:ab (loadtest/README.md)';
  if (!raw) throw new Error(`BENCH_BASELINE is not set; ${usage}`);
  const dir = resolve(raw);
  for (const need of ['gateway/dist/main.js', 'node_modules']) {
    if (!existsSync(join(dir, need)))
      throw new Error(`BENCH_BASELINE=${raw}: ${join(dir, need)} does not exist (run npm ci && npm run build there); ${usage}`);
  }
  return dir;
}

/** Both gateways must give the same bytes for every row (and every caller) before measuring. */
export async function checkSameAnswers(
  rows: Row[],
  callers: { name: string; token: string }[],
  log: (line: string) => void,
): Promise<void> {
  for (const row of rows) {
    const [after, before] = row.targets as [AbTarget, AbTarget];
    const variants: { label: string; headers?: Record<string, string> }[] =
      row.id === 'me' ? callers.map((c) => ({ label: c.name, headers: { authorization: `Bearer ${c.token}` } })) : [{ label: 'anonymous' }];
    for (const v of variants) {
      const withHeaders = (t: AbTarget): AbTarget => ({ ...t, init: { ...t.init, headers: { ...t.init.headers, ...v.headers } } });
      const answers: string[] = [];
      for (const t of [after, before].map(withHeaders)) {
        const { body } = await answerOf(t); // refuses anything but a 200
        answers.push(body);
        if (t.init.method === 'GET') continue;
        const { data, errors } = JSON.parse(body) as { data?: unknown; errors?: unknown[] };
        if (errors?.length || data == null) throw new Error(`${t.label} answered ${t.id} (${v.label}) with errors: ${body.slice(0, 800)}`);
        if (row.id === 'me') {
          const orders = (data as { me: { orders: { product: { name: string } | null; user: { name: string } | null }[] } }).me.orders;
          if (!orders.length || orders.some((o) => !o.product?.name || o.user?.name !== v.label)) {
            throw new Error(
              `${t.label}: me { orders } as ${v.label} lacks orders, products or the caller's own name: ${JSON.stringify(data).slice(0, 500)}`,
            );
          }
        }
      }
      if (answers[0] !== answers[1]) {
        throw new Error(
          `bench:ab: row ${row.id} (${v.label}): the gateways answer differently, so there is nothing to compare.\n` +
            `  after  (this checkout): ${answers[0]!.slice(0, 600)}\n  before (baseline):      ${answers[1]!.slice(0, 600)}`,
        );
      }
    }
  }
  log(`bench:ab: every row answers the same bytes from both gateways (me: for each of ${callers.length} callers)`);
}
