import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { signAccessToken } from '@halo/kit/auth';
import { startBenchSystem } from './bench-system';
import { mergeSection } from './benchmarks-doc';
import { openSubscriber, type FanoutClient, type Subscriber } from './fanout-clients';
import { cpuMicros, memOf } from './pin';
import { lineChartSvg } from './plot';

/**
 * `npm run bench:subscribers` (issue 47, loadtest/README.md): how one gateway's subscription
 * fan-out grows. For each transport (`BENCH_TRANSPORTS`: WebSocket, Server-Sent Events) and each
 * count in `BENCH_SUBSCRIBERS` (500 → 10,000), that many subscribers — each its own connection and
 * user — subscribe to one chat with `newMessage { id text author { name } }` through the gateway;
 * one sender posts `BENCH_RATE` (10) messages per second for `BENCH_SECONDS` (10) over HTTP
 * through the gateway. Per row: publish → receive p50/p95/p99/max over every copy, lost and
 * duplicated copies (each subscriber keeps a bitmap of what it received), the gateway's RSS with the
 * subscribers connected (and per 1,000 above its RSS before they connected), the gateway's and the
 * load generator's CPU per delivered copy, and how long subscribing took. The servers as `npm run
 * bench` runs them (NODE_ENV=production, LOG_LEVEL=info, embedded PostgreSQL, in-process pub/sub),
 * pinned the same way; the subscribers live in this process, on the load generator's CPU. Writes
 * loadtest/results/subscribers.{json,md}, two SVG plots in docs/benchmarks/ and its section of
 * docs/benchmarks.md.
 */
const ROOT = resolve(__dirname, '../..');
const COUNTS = (process.env.BENCH_SUBSCRIBERS ?? '500,2000,5000,10000').split(',').map(Number);
const TRANSPORTS = (process.env.BENCH_TRANSPORTS ?? 'ws,sse').split(',').map((s) => s.trim()) as FanoutClient[];
const RATE = Number(process.env.BENCH_RATE ?? 10);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const PORT_OFFSET = Number(process.env.BENCH_PORT_OFFSET ?? 500);
/** The goal of issue 47 at 10,000 subscribers. */
const GOAL = { p95Ms: 100, rssMb: 500 };
const RESULTS = resolve(ROOT, 'loadtest/results');
const LOGS = join(RESULTS, 'logs/subscribers');
const DOC = resolve(ROOT, 'docs/benchmarks.md');
const PLOTS = resolve(ROOT, 'docs/benchmarks');
const JWT_SECRET = randomBytes(32).toString('base64url');
const KNOBS = ['BENCH_SUBSCRIBERS', 'BENCH_TRANSPORTS', 'BENCH_RATE', 'BENCH_SECONDS', 'BENCH_PORT_OFFSET'];
const COMMAND = [...KNOBS.filter((k) => process.env[k]).map((k) => `${k}=${process.env[k]}`), 'npm run bench:subscribers'].join(' ');
const SELECTION = 'id text author { name }';
const SEND = 'mutation($c: ID!, $t: String!) { sendMessage(chatId: $c, text: $t) { id } }';
const log = (line: string) => process.stderr.write(`${line}\n`);
const now = () => performance.timeOrigin + performance.now();
const pct = (sorted: Float64Array, p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const LABEL: Record<string, string> = { ws: 'WebSocket', sse: 'SSE', 'graphql-ws': 'WebSocket (graphql-ws client)' };

export interface SubscribersRow {
  transport: string;
  subscribers: number;
  subscribeSeconds: number;
  expected: number;
  delivered: number;
  lost: number;
  duplicated: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  rssIdleMb: number;
  rssMb: number;
  /** Gateway RSS growth per 1,000 subscribers, MB. */
  rssPer1000Mb: number;
  gatewayCpuUsPerCopy: number;
  loadGeneratorCpuUsPerCopy: number;
  /** Connections that failed while subscribing and were opened again. */
  reconnected: number;
}

/** A `newMessage` event with its author's name from content, and no errors. */
function checkWithAuthor(event: unknown): string | null {
  const m = (event as { data?: { newMessage?: { id?: unknown; text?: unknown; author?: { name?: unknown } } } } | null)?.data?.newMessage;
  if (!m || typeof m.id !== 'string' || typeof m.text !== 'string' || typeof m.author?.name !== 'string')
    return `incomplete: ${JSON.stringify(event)}`;
  return (event as { errors?: unknown }).errors ? `errors: ${JSON.stringify(event)}` : null;
}

// eslint-disable-next-line max-lines-per-function -- one row: subscribe, measure, close, in order
async function row(gatewayUrl: string, gatewayPid: number, transport: FanoutClient, n: number): Promise<SubscribersRow> {
  const sender = signAccessToken({ sub: '1', name: 'bench', role: 'user' }, JWT_SECRET, 3600);
  const chatId = `bench-subs-${transport}-${n}-${Date.now()}`;
  const send = async (text: string) => {
    const res = await fetch(`${gatewayUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${sender}` },
      body: JSON.stringify({ query: SEND, variables: { c: chatId, t: text } }),
    });
    const body = (await res.json()) as { errors?: unknown };
    if (body.errors) throw new Error(`sendMessage failed: ${JSON.stringify(body.errors)}`);
  };
  const messages = Math.round(RATE * SECONDS);
  /** The measured messages by text, in the order sent. */
  const index = new Map<string, number>();
  /** Per subscriber, which measured messages arrived (a copy already set is a duplicate). */
  const seen = Array.from({ length: n }, () => new Uint8Array(messages));
  const latencies = new Float64Array(n * messages);
  let delivered = 0;
  let duplicated = 0;
  let wrong = 0;
  let failed = 0;
  const live = new Uint8Array(n);
  let liveCount = 0;
  const references = new Map<string, Buffer>();
  const subscribers: Subscriber[] = [];
  const rssIdle = memOf(gatewayPid).rss; // MB
  const subscribeStart = Date.now();
  try {
    const retries = new Uint8Array(n);
    const open = (i: number): Subscriber => {
      const token = signAccessToken({ sub: String(2 + (i % 5000)), name: `subscriber ${i}`, role: 'user' }, JWT_SECRET, 3600);
      return openSubscriber(transport, {
        url: `${gatewayUrl.replace(/^http/, 'ws')}/graphql`,
        token,
        query: `subscription($c: ID!) { newMessage(chatId: $c) { ${SELECTION} } }`,
        chatId,
        check: checkWithAuthor,
        references,
        on: {
          probe: () => {
            if (!live[i]) {
              live[i] = 1;
              liveCount++;
            }
          },
          message: (text, at) => {
            const m = index.get(text);
            if (m === undefined) return;
            if (seen[i]![m]) {
              duplicated++;
              return;
            }
            seen[i]![m] = 1;
            latencies[delivered++] = at - Number(text.slice(2));
          },
          wrong: (why) => {
            if (wrong++ < 5) log(`bench:subscribers: subscriber ${i}: ${why}`);
          },
          failed: (why) => {
            if (failed++ < 5) log(`bench:subscribers: subscriber ${i} failed: ${why}`);
            // A connection refused or reset while subscribing (the accept queue under a burst of
            // thousands) is opened again, as a client would; one that fails after it was live is not.
            if (!live[i] && index.size === 0 && retries[i]! < 3) {
              retries[i]!++;
              setTimeout(() => (subscribers[i] = open(i)), 250);
            }
          },
        },
      });
    };
    for (let i = 0; i < n; i++) {
      subscribers.push(open(i));
      // Connections opened in batches, so the gateway's accept queue is not the thing measured.
      if (i % 250 === 249) await sleep(20);
    }
    const deadline = Date.now() + 120_000 + n * 20;
    while (liveCount < n) {
      if (Date.now() > deadline) throw new Error(`only ${liveCount}/${n} ${transport} subscribers became live (${failed} failed)`);
      await send(`probe:${Date.now()}`);
      await sleep(250);
    }
    const subscribeSeconds = (Date.now() - subscribeStart) / 1000;
    await sleep(500);
    const rss = memOf(gatewayPid).rss;
    const cpuAtStart = { gateway: cpuMicros(gatewayPid), bench: process.cpuUsage() };
    const started = Date.now();
    for (let m = 0; m < messages; m++) {
      const text = `t:${now()}`;
      index.set(text, m);
      await send(text);
      const next = started + ((m + 1) * 1000) / RATE;
      await sleep(Math.max(0, next - Date.now()));
    }
    const expected = n * messages;
    const settle = Date.now() + 15_000;
    while (delivered < expected && Date.now() < settle) await sleep(50);
    const gatewayCpu = cpuMicros(gatewayPid) - cpuAtStart.gateway;
    const benchCpu = process.cpuUsage(cpuAtStart.bench);
    if (wrong > 0) throw new Error(`${wrong} wrong messages (see above)`);
    const sorted = latencies.subarray(0, delivered).sort();
    const result: SubscribersRow = {
      transport,
      subscribers: n,
      subscribeSeconds,
      expected,
      delivered,
      lost: expected - delivered,
      duplicated,
      p50: pct(sorted, 50),
      p95: pct(sorted, 95),
      p99: pct(sorted, 99),
      max: sorted.at(-1) ?? NaN,
      rssIdleMb: rssIdle,
      rssMb: rss,
      // Over the RSS before this row's subscribers connected: memory freed by an earlier row is
      // reused rather than returned, so later rows read low; render() shows the slope between rows.
      rssPer1000Mb: ((rss - rssIdle) / n) * 1000,
      gatewayCpuUsPerCopy: delivered ? gatewayCpu / delivered : NaN,
      loadGeneratorCpuUsPerCopy: delivered ? (benchCpu.user + benchCpu.system) / delivered : NaN,
      reconnected: retries.reduce((a, b) => a + b, 0),
    };
    log(
      `bench:subscribers: ${transport} × ${n}: p50 ${result.p50.toFixed(1)} ms, p95 ${result.p95.toFixed(1)} ms, p99 ${result.p99.toFixed(1)} ms, ` +
        `${result.lost} lost, ${duplicated} duplicated; gateway RSS ${result.rssMb.toFixed(0)} MB (${result.rssPer1000Mb.toFixed(1)} MB per 1,000), ` +
        `CPU per copy: gateway ${result.gatewayCpuUsPerCopy.toFixed(1)} µs, load generator ${result.loadGeneratorCpuUsPerCopy.toFixed(1)} µs; subscribed in ${subscribeSeconds.toFixed(1)} s`,
    );
    return result;
  } finally {
    await Promise.all(subscribers.map((s) => s.close()));
  }
}

const f = (v: number, d = 1) => (Number.isFinite(v) ? v.toFixed(d) : '—');

function render(rows: SubscribersRow[], info: { started: Date; pinning: string; load: number[][] }, plots: string[]): string {
  const largest = (t: string) => rows.filter((r) => r.transport === t).sort((a, b) => b.subscribers - a.subscribers)[0];
  const goals = TRANSPORTS.map((t) => largest(t))
    .filter((r): r is SubscribersRow => r !== undefined && r.subscribers >= 10_000)
    .map(
      (r) =>
        `- ${LABEL[r.transport] ?? r.transport}, ${r.subscribers} subscribers: p95 ${f(r.p95)} ms (goal < ${GOAL.p95Ms}: ${r.p95 < GOAL.p95Ms ? 'met' : '**not met**'}), gateway RSS ${f(r.rssMb, 0)} MB (goal < ${GOAL.rssMb}: ${r.rssMb < GOAL.rssMb ? 'met' : '**not met**'}), ${r.lost} lost, ${r.duplicated} duplicated`,
    );
  return [
    '## Subscribers: how one gateway’s fan-out grows',
    '',
    `- Command: \`${COMMAND}\` (${info.started.toISOString()}); ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, Node ${process.version}`,
    `- CPUs: ${info.pinning}; load average ${info.load[0]!.map((v) => v.toFixed(2)).join(' / ')} → ${info.load[1]!.map((v) => v.toFixed(2)).join(' / ')}`,
    `- One chat, \`newMessage { ${SELECTION} }\` (the author resolved from content for each event), ${RATE} messages/s for ${SECONDS} s sent over HTTP through the gateway; every subscriber its own connection and user, in the load generator's one process; latency from send to each copy's arrival. Embedded PostgreSQL, in-process pub/sub, NODE_ENV=production, LOG_LEVEL=info.`,
    '',
    '| transport | subscribers | subscribed in s (reopened) | p50 ms | p95 ms | p99 ms | max ms | lost | duplicated | gateway RSS MB (before) | MB per 1,000 more | gateway CPU µs per copy | load generator CPU µs per copy |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map((r, i) => {
      // The slope from the previous row of the same transport (the first: over the RSS before it).
      const prev = rows[i - 1]?.transport === r.transport ? rows[i - 1] : undefined;
      const per1000 = prev ? ((r.rssMb - prev.rssMb) / (r.subscribers - prev.subscribers)) * 1000 : r.rssPer1000Mb;
      return `| ${LABEL[r.transport] ?? r.transport} | ${r.subscribers} | ${f(r.subscribeSeconds)} (${r.reconnected}) | ${f(r.p50)} | ${f(r.p95)} | ${f(r.p99)} | ${f(r.max)} | ${r.lost} | ${r.duplicated} | ${f(r.rssMb, 0)} (${f(r.rssIdleMb, 0)}) | ${f(per1000)} | ${f(r.gatewayCpuUsPerCopy)} | ${f(r.loadGeneratorCpuUsPerCopy)} |`;
    }),
    '',
    ...(goals.length ? ['Goal (issue 47: 10,000 subscribers, p95 < 100 ms, gateway RSS < 500 MB):', '', ...goals, ''] : []),
    ...plots.map((p) => `![${p}](benchmarks/${p})`),
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  const started = new Date();
  const bench = await startBenchSystem({
    name: 'subscribers',
    portOffset: PORT_OFFSET,
    jwtSecret: JWT_SECRET,
    logDir: LOGS,
    generator: 'this process: the subscribers and the sender',
    // One sender posts every probe and message of a run: the per-caller limits would refuse it.
    envFor: { gateway: { RATE_LIMIT_AUTHENTICATED: '0', RATE_LIMIT_GRAPHQL_COST: '0' } },
    log,
  });
  const { system, pinning } = bench;
  try {
    bench.pinAll();
    const gw = system.processes.find((p) => p.name === 'gateway')!;
    const load = [loadavg()];
    const rows: SubscribersRow[] = [];
    for (const transport of TRANSPORTS) {
      for (const n of COUNTS) {
        rows.push(await row(gw.url, gw.child.pid!, transport, n));
        await sleep(2000); // the closed connections drained before the next row's "before"
      }
    }
    load.push(loadavg());
    const series = (of: (r: SubscribersRow) => number, suffix = '') =>
      TRANSPORTS.map((t) => ({
        name: `${LABEL[t] ?? t}${suffix}`,
        points: rows.filter((r) => r.transport === t).map((r) => ({ x: r.subscribers, y: of(r) })),
      }));
    const latency = await lineChartSvg({
      title: 'Publish → receive latency against subscribers, one gateway',
      subtitle: `${RATE} messages/s to one chat, newMessage { ${SELECTION} }`,
      x: { title: 'subscribers' },
      y: { title: 'ms', scale: 'log' },
      series: [...series((r) => r.p50, ' p50'), ...series((r) => r.p95, ' p95'), ...series((r) => r.p99, ' p99')],
      rules: [{ y: GOAL.p95Ms, label: `goal: p95 < ${GOAL.p95Ms} ms` }],
    });
    const memory = await lineChartSvg({
      title: 'Gateway RSS against subscribers',
      subtitle: 'resident set with every subscriber connected',
      x: { title: 'subscribers' },
      y: { title: 'MB' },
      series: series((r) => r.rssMb),
      rules: [{ y: GOAL.rssMb, label: `goal: < ${GOAL.rssMb} MB` }],
    });
    writeFileSync(join(PLOTS, 'subscribers-latency.svg'), latency);
    writeFileSync(join(PLOTS, 'subscribers-rss.svg'), memory);
    const section = render(rows, { started, pinning: pinning.describe, load }, ['subscribers-latency.svg', 'subscribers-rss.svg']);
    // The plots are linked from docs/benchmarks.md; from loadtest/results/ they are two folders up.
    writeFileSync(join(RESULTS, 'subscribers.md'), `${section.replaceAll('](benchmarks/', '](../../docs/benchmarks/')}\n`);
    writeFileSync(join(RESULTS, 'subscribers.json'), `${JSON.stringify({ command: COMMAND, date: started, rows }, null, 2)}\n`);
    const doc = existsSync(DOC) ? readFileSync(DOC, 'utf8') : '';
    writeFileSync(DOC, mergeSection(doc, 'subscribers', section));
    log(`bench:subscribers: wrote ${relative(ROOT, join(RESULTS, 'subscribers'))}.{json,md}, the plots and docs/benchmarks.md`);
    process.stdout.write(`\n${section}\n`);
    if (rows.some((r) => r.lost || r.duplicated)) process.exitCode = 1;
  } finally {
    await bench.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:subscribers failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
