import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import autocannon from 'autocannon';
import WebSocket from 'ws';
import { startSystem, type RunningSystem } from '@halo/tools';
import { memOf, pin, pinTree, planPinning } from './pin';

/**
 * `npm run bench:soak`: does the gateway's memory stay flat under a long mixed load? Starts Halo
 * embedded (NODE_ENV=production, the production log level), loads the gateway for `SOAK_SECONDS`
 * (default 600) with a mix of every kind of request it serves — a nested federated query over
 * POST, a flat one over GET, an anonymous cacheable one (the edge response cache), REST reads
 * proxied to two services — and every `SOAK_SAMPLE_SECONDS` (default 60) reads the gateway's heap
 * AFTER a full garbage collection, through the V8 inspector that Node opens on SIGUSR1. A leak
 * shows as heap-after-GC that keeps rising from sample to sample; RSS alone would mix in
 * allocator slack. Results: loadtest/results/soak.{json,md}.
 */
const ROOT = resolve(__dirname, '../..');
const SECONDS = Number(process.env.SOAK_SECONDS ?? 600);
const SAMPLE_S = Number(process.env.SOAK_SAMPLE_SECONDS ?? 60);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const PORT_OFFSET = Number(process.env.BENCH_PORT_OFFSET ?? 240);
const INSPECTOR_PORT = Number(process.env.SOAK_INSPECTOR_PORT ?? 9229);
const OUT_DIR = resolve(ROOT, 'loadtest/results');

const NESTED = '{ users { id name posts { id title author { id name } comments { id body author { name } } } } }';
const FLAT = '{ posts(first: 10) { edges { node { id title } } } }';
const PRODUCTS = '{ products(page: 1, limit: 5) { data { id name price } } }';

interface Sample {
  atS: number;
  heapAfterGcMb: number;
  rssMb: number;
  requests: number;
}

const log = (line: string) => process.stderr.write(`soak: ${line}\n`);

/** One CDP call over a fresh inspector session: collect garbage, then read the heap. */
async function heapAfterGc(pid: number): Promise<number> {
  process.kill(pid, 'SIGUSR1'); // opens the inspector (a no-op once open)
  let target: { webSocketDebuggerUrl: string } | undefined;
  for (let i = 0; i < 50 && !target; i++) {
    try {
      const list = (await (await fetch(`http://127.0.0.1:${INSPECTOR_PORT}/json/list`)).json()) as { webSocketDebuggerUrl: string }[];
      target = list[0];
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  if (!target) throw new Error(`the gateway's inspector did not open on port ${INSPECTOR_PORT}`);
  const ws = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise<void>((ok, fail) => {
    ws.once('open', () => ok());
    ws.once('error', fail);
  });
  let id = 0;
  const call = (method: string) =>
    new Promise<Record<string, unknown>>((ok, fail) => {
      const me = ++id;
      const onMessage = (data: WebSocket.RawData) => {
        // A text frame arrives as a Buffer (ws's default binaryType, 'nodebuffer').
        const msg = JSON.parse((data as Buffer).toString()) as {
          id?: number;
          result?: Record<string, unknown>;
          error?: { message: string };
        };
        if (msg.id !== me) return;
        ws.off('message', onMessage);
        if (msg.error) fail(new Error(msg.error.message));
        else ok(msg.result ?? {});
      };
      ws.on('message', onMessage);
      ws.send(JSON.stringify({ id: me, method }));
    });
  try {
    await call('HeapProfiler.collectGarbage');
    const usage = await call('Runtime.getHeapUsage');
    return (usage.usedSize as number) / 2 ** 20;
  } finally {
    ws.close();
  }
}

/** Least-squares slope of heap after GC, in MB per minute. */
function slopePerMinute(samples: Sample[]): number {
  const n = samples.length;
  if (n < 2) return 0;
  const xs = samples.map((s) => s.atS / 60);
  const ys = samples.map((s) => s.heapAfterGcMb);
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i]! - mx) * (ys[i]! - my);
    den += (xs[i]! - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

// eslint-disable-next-line max-lines-per-function -- a benchmark script: its steps in the order they run
async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'halo-soak-'));
  chmodSync(dataDir, 0o755);
  let system: RunningSystem | undefined;
  try {
    system = await startSystem({
      portOffset: PORT_OFFSET,
      env: { NODE_ENV: 'production', HALO_ENV: 'development', HALO_BUNDLES: '0', LOG_LEVEL: 'info', GRAPHQL_MAX_COST: '5000' },
      postgresDataDir: join(dataDir, 'postgres'),
      // Logs are not read here: a production log level, written where no one pays to parse them.
      onLog: () => undefined,
    });
    const gateway = system.processes.find((p) => p.name === 'gateway')!.child.pid!;
    // As `npm run bench` pins (src/pin.ts): the servers, PostgreSQL's backends included, on one CPU.
    const pinning = planPinning();
    const pinned = pinning.enabled;
    if (pinned) {
      for (const p of system.processes) pinTree(p.child.pid!, pinning.serverCpu!);
      if (system.postgres) pinTree(system.postgres.child.pid!, pinning.serverCpu!);
      pin(process.pid, pinning.loadCpu!);
    }
    const json = { 'content-type': 'application/json' };
    const requests: autocannon.Request[] = [
      { method: 'POST', path: '/graphql', headers: json, body: JSON.stringify({ query: NESTED }) },
      { method: 'GET', path: `/graphql?${new URLSearchParams({ query: FLAT })}` },
      { method: 'POST', path: '/graphql', headers: json, body: JSON.stringify({ query: PRODUCTS }) },
      { method: 'GET', path: '/posts/2' },
      { method: 'GET', path: '/products?page=2&limit=5' },
    ];
    // Every request must work before the soak means anything.
    for (const r of requests) {
      const res = await fetch(`${system.gatewayUrl}${r.path}`, {
        method: r.method,
        headers: (r.headers ?? {}) as Record<string, string>,
        ...(r.body ? { body: r.body as string } : {}),
      });
      const text = await res.text();
      if (res.status !== 200 || text.includes('"errors"')) throw new Error(`${r.method} ${r.path}: ${res.status} ${text.slice(0, 200)}`);
    }
    log('warm-up 30 s');
    await autocannon({ url: system.gatewayUrl, connections: CONNECTIONS, duration: 30, requests });

    const samples: Sample[] = [];
    const started = Date.now();
    let total = 0;
    const sample = async () => {
      const heap = await heapAfterGc(gateway);
      samples.push({ atS: Math.round((Date.now() - started) / 1000), heapAfterGcMb: heap, rssMb: memOf(gateway).rss, requests: total });
      log(`t=${samples.at(-1)!.atS}s heap after GC ${heap.toFixed(1)} MB, RSS ${samples.at(-1)!.rssMb.toFixed(0)} MB`);
    };
    await sample();
    let instance: autocannon.Instance | undefined;
    const run = new Promise<autocannon.Result>((ok, fail) => {
      instance = autocannon({ url: system!.gatewayUrl, connections: CONNECTIONS, duration: SECONDS, requests }, (err, res) =>
        err ? fail(err) : ok(res),
      );
    });
    instance!.on('response', () => total++);
    const timer = setInterval(() => void sample().catch((err: Error) => log(`sample failed: ${err.message}`)), SAMPLE_S * 1000);
    const result = await run;
    clearInterval(timer);
    await sample();

    const errors = result.errors + result.timeouts + result.non2xx;
    const first = samples[0]!.heapAfterGcMb;
    const last = samples.at(-1)!.heapAfterGcMb;
    const slope = slopePerMinute(samples.slice(1)); // the first sample precedes the load
    const peak = memOf(gateway).peak;
    const cpu = cpus();
    const md = [
      '## Gateway memory over a soak (`npm run bench:soak`)',
      '',
      `- Date: ${new Date().toISOString()}; machine: ${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`,
      `- ${SECONDS} s of mixed load (nested POST, flat GET, cacheable products, REST /posts/2 and /products) at ${CONNECTIONS} connections; ` +
        `${pinning.describe}; NODE_ENV=production, LOG_LEVEL=info`,
      `- ${result.requests.total} requests (${Math.round(result.requests.average)}/s), ${errors} errors`,
      '',
      '| minute | heap after GC MB | RSS MB |',
      '|---:|---:|---:|',
      ...samples.map((s) => `| ${(s.atS / 60).toFixed(1)} | ${s.heapAfterGcMb.toFixed(1)} | ${s.rssMb.toFixed(0)} |`),
      '',
      `Heap after GC: ${first.toFixed(1)} MB before the load, ${last.toFixed(1)} MB after it; slope under load ${slope >= 0 ? '+' : ''}${(slope * 1024).toFixed(0)} KB/min. ` +
        `Peak RSS ${peak.toFixed(0)} MB (goal < 300).`,
      '',
    ].join('\n');
    mkdirSync(OUT_DIR, { recursive: true });
    writeFileSync(
      join(OUT_DIR, 'soak.json'),
      `${JSON.stringify({ seconds: SECONDS, connections: CONNECTIONS, pinned, requests: result.requests.total, errors, samples, slopeMbPerMin: slope, peakRssMb: peak }, null, 2)}\n`,
    );
    writeFileSync(join(OUT_DIR, 'soak.md'), md);
    process.stdout.write(md);
    if (errors > 0) process.exitCode = 1;
  } finally {
    await system?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`soak failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
