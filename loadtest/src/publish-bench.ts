import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { SERVICE_TOKEN_HEADER, type ServiceContract } from '@halo/kit/contract';
import { startSystem, type RunningSystem } from '@halo/tools';
import { checkoutContracts } from '@halo/tools/dist/checkout-contracts';
import { developerToken } from '@halo/tools/dist/dev-credentials';
import { mergeSection } from './benchmarks-doc';
import { pin, pinTree, planPinning } from './pin';
import { openSubscriptions, startSteadyLoad } from './steady-load';

/**
 * `npm run bench:publish` (issue 25): what a team's publish costs the traffic going through the
 * gateway. Starts Halo as `npm start` does (the registry included; every service publishes its
 * contract at start; NODE_ENV=production), pins the servers to one CPU and this process (the load
 * generator) to the other, then under BENCH_RATE (200) req/s of mixed GraphQL and REST through
 * the gateway, with BENCH_SUBSCRIBERS (20) open subscriptions fed once a second, publishes
 * catalog's contract BENCH_PUBLISHES (10) times, each adding one field, and measures
 *
 * - publish → served: from sending `POST /v1/publish` until the gateway's /readyz reports the
 *   composition that publish made (the gateway polls every REGISTRY_POLL_MS, default 2000);
 * - failed requests (any non-200, GraphQL error or network error) and subscriptions ended;
 * - `check` for one subgraph: the CLI (`npm run subgraph -- check --service catalog`) end to end,
 *   and the registry's `POST /v1/check` alone;
 *
 * and writes its section of docs/benchmarks.md.
 */
const ROOT = resolve(__dirname, '../..');
const RATE = Number(process.env.BENCH_RATE ?? 200);
const PUBLISHES = Number(process.env.BENCH_PUBLISHES ?? 10);
const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 20);
const PORT_OFFSET = Number(process.env.BENCH_PORT_OFFSET ?? 1680);
const POLL_MS = process.env.REGISTRY_POLL_MS ?? '2000';
const OUT = resolve(ROOT, 'docs/benchmarks.md');
const LOGS = resolve(ROOT, 'loadtest/results/logs-publish');
const JWT_SECRET = randomBytes(32).toString('base64url');
const log = (line: string) => process.stderr.write(`${line}\n`);
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
const median = (xs: number[]) =>
  pct(
    [...xs].sort((a, b) => a - b),
    50,
  );

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 60_000, everyMs = 50): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

const composition = async (gatewayUrl: string) =>
  (await (await fetch(`${gatewayUrl}/readyz`)).json()) as { composition: string; source: string };

async function publishAll(
  registryUrl: string,
  gatewayUrl: string,
  base: ServiceContract,
): Promise<{ latencies: number[]; answered: number[] }> {
  const latencies: number[] = [];
  const answered: number[] = [];
  let sdl = base.sdl!;
  for (let i = 1; i <= PUBLISHES; i++) {
    sdl += `\nextend type Query { benchPublish${Date.now()}x${i}: String }\n`;
    // As `npm run subgraph` does against npm start: a single-use token from the developer key.
    const token = await developerToken(registryUrl);
    const started = performance.now();
    const res = await fetch(`${registryUrl}/v1/publish`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { [SERVICE_TOKEN_HEADER]: token } : {}) },
      body: JSON.stringify({ contract: { ...base, sdl } }),
    });
    const body = (await res.json()) as { composition?: number; error?: string };
    answered.push(performance.now() - started);
    if (res.status !== 201) throw new Error(`publish ${i} refused (${res.status}): ${JSON.stringify(body).slice(0, 300)}`);
    const want = String(body.composition);
    await waitFor(`composition ${want}`, async () => (await composition(gatewayUrl)).composition === want, 30_000, 20);
    latencies.push(performance.now() - started);
    log(
      `bench:publish: publish ${i} → composition ${want}: registry answered in ${Math.round(answered.at(-1)!)} ms, served in ${Math.round(latencies.at(-1)!)} ms`,
    );
    // Publishes a few seconds apart, at varying points of the gateway's poll cycle.
    await new Promise((r) => setTimeout(r, 1_500 + Math.random() * 1_500));
  }
  return { latencies, answered };
}

function timeCliChecks(registryUrl: string, contract: ServiceContract): number[] {
  const cli: number[] = [];
  if (!existsSync(resolve(ROOT, 'tools/dist/subgraph.js'))) return cli;
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    const run = spawnSync(
      process.execPath,
      [resolve(ROOT, 'tools/dist/subgraph.js'), 'check', '--service', 'catalog', '--url', contract.url, '--registry', registryUrl],
      {
        encoding: 'utf8',
      },
    );
    if (run.status !== 0) throw new Error(`check exited ${run.status}: ${run.stdout}${run.stderr}`);
    cli.push(performance.now() - started);
  }
  return cli;
}

async function timeHttpChecks(registryUrl: string, contract: ServiceContract): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    const res = await fetch(`${registryUrl}/v1/check`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ contract }),
    });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`check answered ${res.status}`);
    out.push(performance.now() - started);
  }
  return out;
}

interface Result {
  latencies: number[];
  /** Until the registry answered the publish (composed and stored). */
  answered: number[];
  sent: number;
  failed: number;
  reasons: Map<string, number>;
  seconds: number;
  subscriptions: { open: number; ended: number; delivered: number; events: number; reasons: Map<string, number> };
  checkCli: number[];
  checkHttp: number[];
  pinning: string;
  load: [number[], number[]];
}

function render(r: Result): string {
  const sorted = [...r.latencies].sort((a, b) => a - b);
  const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  const ok = (met: boolean) => (met ? 'yes' : '**NO**');
  const reasons = (m: Map<string, number>) => (m.size ? ` (${[...m].map(([k, v]) => `${k}: ${v}`).join('; ')})` : '');
  return [
    '## Publishing under load (issue 25)',
    '',
    `\`npm run bench:publish\` (loadtest/src/publish-bench.ts), ${new Date().toISOString().slice(0, 10)}, NODE_ENV=production, ` +
      `embedded PostgreSQL, ${cpus().length} CPUs (${cpus()[0]?.model.trim()}); ${r.pinning}; load average ${r.load[0].map((x) => x.toFixed(2)).join(' ')} → ${r.load[1].map((x) => x.toFixed(2)).join(' ')}.`,
    `${PUBLISHES} successive additive publishes of catalog's contract (one new Query field each) through the registry, while`,
    `${RATE} req/s (open loop) of GraphQL (\`products\`) and REST (\`/products\`, \`/api/v2/products\`, \`/products/1\`) went through the gateway`,
    `for ${r.seconds.toFixed(0)} s, with ${r.subscriptions.open} open \`newMessage\` subscriptions (\`author { name }\` from content) fed once a second. The gateway polls`,
    `the registry every ${POLL_MS} ms (REGISTRY_POLL_MS, the default); publish → served runs from sending \`POST /v1/publish\` until the`,
    "gateway's /readyz reports the composition it made.",
    '',
    '| measure | value | goal | met |',
    '|---|---|---|---|',
    `| publish → served, p50 / p95 / max | ${s(pct(sorted, 50))} / ${s(pct(sorted, 95))} / ${s(sorted.at(-1)!)} | < 10 s | ${ok(pct(sorted, 95) < 10_000)} |`,
    `| failed requests | ${r.failed} of ${r.sent}${reasons(r.reasons)} | 0 | ${ok(r.failed === 0)} |`,
    `| subscriptions ended | ${r.subscriptions.ended} of ${r.subscriptions.open}${reasons(r.subscriptions.reasons)}; ${r.subscriptions.delivered} got the last message; ${r.subscriptions.events} events | 0 | ${ok(r.subscriptions.ended === 0 && r.subscriptions.delivered === r.subscriptions.open)} |`,
    r.checkCli.length
      ? `| \`check\` of one subgraph, CLI end to end (median of 5; max) | ${s(median(r.checkCli))} (${s(Math.max(...r.checkCli))}) | < 2 s | ${ok(Math.max(...r.checkCli) < 2_000)} |`
      : '| `check` of one subgraph, CLI end to end | — (no tools/dist/subgraph.js in this build) | < 2 s | — |',
    `| \`POST /v1/check\` alone (median of 5; max) | ${s(median(r.checkHttp))} (${s(Math.max(...r.checkHttp))}) | | |`,
    '',
    `Each publish → served: ${r.latencies.map((ms) => `${(ms / 1000).toFixed(2)}`).join(', ')} s; of which the registry's answer to the`,
    `publish (check, compose, store): ${r.answered.map((ms) => `${(ms / 1000).toFixed(2)}`).join(', ')} s. The rest is the gateway's poll interval and swap.`,
    '',
  ].join('\n');
}

async function measure(system: RunningSystem, pinning: ReturnType<typeof planPinning>): Promise<Result> {
  const gatewayUrl = system.gatewayUrl;
  const registryUrl = system.processes.find((p) => p.name === 'registry')!.url;
  const catalogUrl = system.processes.find((p) => p.name === 'catalog' && !p.replica)!.url;
  const base = { ...checkoutContracts().find((c) => c.service === 'catalog')!, url: catalogUrl };
  await waitFor('the gateway to serve the registry composition', async () => (await composition(gatewayUrl)).source === 'registry');
  const load0 = loadavg();
  const subs = openSubscriptions({ gatewayUrl, jwtSecret: JWT_SECRET, count: SUBSCRIBERS, sendEveryMs: 1_000 });
  const load = startSteadyLoad({ gatewayUrl, ratePerSecond: RATE });
  // Warm: every path planned and every pool open before the first publish.
  await new Promise((r) => setTimeout(r, 5_000));
  const { latencies, answered } = await publishAll(registryUrl, gatewayUrl, base);
  await new Promise((r) => setTimeout(r, 3_000));
  const { seconds } = await load.stop();
  const delivered = await subs.lastDelivered();
  // Before closing: closing completes every subscription on purpose.
  const ended = subs.counters.ended;
  const endReasons = new Map(subs.counters.reasons);
  await subs.close();
  const checkCli = timeCliChecks(registryUrl, base);
  const checkHttp = await timeHttpChecks(registryUrl, base);
  return {
    latencies,
    answered,
    sent: load.counters.sent,
    failed: load.counters.failed,
    reasons: load.counters.reasons,
    seconds,
    subscriptions: { open: subs.counters.open, ended, delivered, events: subs.counters.events, reasons: endReasons },
    checkCli,
    checkHttp,
    pinning: pinning.describe,
    load: [load0, loadavg()],
  };
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'halo-bench-publish-'));
  chmodSync(dataDir, 0o755);
  mkdirSync(LOGS, { recursive: true });
  const launcherLog = openSync(join(LOGS, 'launcher.log'), 'w');
  const pinning = planPinning();
  log(`bench:publish: ${pinning.describe}`);
  if (pinning.enabled) pin(process.pid, pinning.serverCpu!);
  let system: RunningSystem | undefined;
  try {
    system = await startSystem({
      portOffset: PORT_OFFSET,
      devOidc: false,
      env: { NODE_ENV: 'production', HALO_ENV: 'development', HALO_BUNDLES: '0', LOG_LEVEL: 'warn', JWT_SECRET, DATABASE_URL: undefined },
      envFor: { gateway: { REGISTRY_POLL_MS: POLL_MS } },
      postgresDataDir: join(dataDir, 'postgres'),
      logDir: LOGS,
      onLog: (name, line) => writeSync(launcherLog, `${name}| ${line}\n`),
    });
    if (pinning.enabled) {
      for (const p of system.processes) pinTree(p.child.pid!, pinning.serverCpu!);
      if (system.postgres) pinTree(system.postgres.child.pid!, pinning.serverCpu!);
      pin(process.pid, pinning.loadCpu!);
    }
    const result = await measure(system, pinning);
    const section = render(result);
    process.stdout.write(`${section}\n`);
    const doc = existsSync(OUT) ? readFileSync(OUT, 'utf8') : '';
    writeFileSync(OUT, mergeSection(doc, 'publish', section));
    log(`bench:publish: wrote its section of ${OUT}`);
  } finally {
    await system?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:publish failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
