import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { signAccessToken } from '@halo/kit/auth';
import { startSystem, type RunningSystem } from '@halo/tools';
import { mergeSection } from './benchmarks-doc';
import { pin, pinTree, planPinning } from './pin';

/**
 * `npm run bench:replay` (issue 31): how long a resumed subscription takes to replay 1,000 missed
 * messages. Starts Halo as `npm start` does (embedded PostgreSQL, in-process pub/sub,
 * NODE_ENV=production), servers pinned to one CPU and this process to the other; writes 1,001
 * messages to one chat, then BENCH_RUNS (5) times subscribes through the gateway with
 * `newMessage(chatId, after: <first>)` and times subscribe → the 1,000th event, and the same
 * straight to chat (no gateway). A figure, not a test: nothing asserts it.
 */
const ROOT = resolve(__dirname, '../..');
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const REPLAY = 1_000;
const PORT_OFFSET = Number(process.env.BENCH_PORT_OFFSET ?? 1690);
const OUT = resolve(ROOT, 'docs/benchmarks.md');
const JWT_SECRET = randomBytes(32).toString('base64url');
const log = (line: string) => process.stderr.write(`${line}\n`);
const TOKEN = signAccessToken({ sub: '2', name: 'bench', role: 'user' }, JWT_SECRET, 3600);
const SEND = 'mutation($c: ID!, $t: String!) { sendMessage(chatId: $c, text: $t) { id } }';
const RESUME = 'subscription($c: ID!, $after: ID) { newMessage(chatId: $c, after: $after) { id chatId text createdAt } }';

async function send(url: string, chatId: string, text: string): Promise<string> {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ query: SEND, variables: { c: chatId, t: text } }),
  });
  const body = (await res.json()) as { data?: { sendMessage: { id: string } }; errors?: unknown };
  if (!body.data) throw new Error(`sendMessage failed: ${JSON.stringify(body.errors)}`);
  return body.data.sendMessage.id;
}

/** Milliseconds from subscribe to the REPLAY-th event (a fresh socket each time, connected first). */
async function timeReplay(url: string, chatId: string, after: string): Promise<number> {
  let connected: () => void = () => undefined;
  const ready = new Promise<void>((ok) => (connected = ok));
  const client = createClient({
    url: `${url.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${TOKEN}` },
    lazy: false, // connected (and acknowledged) before the clock starts
    on: { connected: () => connected() },
  });
  try {
    await ready;
    const started = performance.now();
    let received = 0;
    for await (const event of client.iterate({ query: RESUME, variables: { c: chatId, after } })) {
      if (event.errors) throw new Error(JSON.stringify(event.errors));
      if (++received === REPLAY) break;
    }
    return performance.now() - started;
  } finally {
    await client.dispose();
  }
}

function render(gateway: number[], direct: number[], pinning: string): string {
  const row = (name: string, xs: number[]) => {
    const sorted = [...xs].sort((a, b) => a - b);
    return `| ${name} | ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)} | ${sorted[0]!.toFixed(1)} | ${sorted.at(-1)!.toFixed(1)} |`;
  };
  return `## Resuming a subscription: replay of ${REPLAY} messages (\`npm run bench:replay\`, issue 31)

- One subscriber, \`newMessage(chatId, after)\` ${REPLAY} messages behind; subscribe → the ${REPLAY}th event; ${RUNS} runs, each on a fresh connection; goal < 500 ms
- Date: ${new Date().toISOString()}
- CPUs: ${pinning}; embedded PostgreSQL, in-process pub/sub, NODE_ENV=production

| path | median ms | min ms | max ms |
|---|---:|---:|---:|
${row('through the gateway (WebSocket)', gateway)}
${row('straight to chat', direct)}
`;
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'halo-bench-replay-'));
  chmodSync(dataDir, 0o755);
  const pinning = planPinning();
  let system: RunningSystem | undefined;
  try {
    system = await startSystem({
      portOffset: PORT_OFFSET,
      devOidc: false,
      env: { NODE_ENV: 'production', HALO_ENV: 'development', HALO_BUNDLES: '0', LOG_LEVEL: 'warn', JWT_SECRET, DATABASE_URL: undefined },
      postgresDataDir: join(dataDir, 'postgres'),
    });
    if (pinning.enabled) {
      for (const p of system.processes) pinTree(p.child.pid!, pinning.serverCpu!);
      if (system.postgres) pinTree(system.postgres.child.pid!, pinning.serverCpu!);
      pin(process.pid, pinning.loadCpu!);
    }
    const chat = system.processes.find((p) => p.name === 'chat')!.url;
    const chatId = `bench-replay-${Date.now()}`;
    const first = await send(chat, chatId, 'first');
    for (let i = 0; i < REPLAY; i++) await send(chat, chatId, `message ${i} ${'x'.repeat(60)}`);
    log(`bench:replay: ${REPLAY} messages written`);
    const gateway: number[] = [];
    const direct: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      gateway.push(await timeReplay(system.gatewayUrl, chatId, first));
      direct.push(await timeReplay(chat, chatId, first));
      log(`bench:replay: run ${i + 1}: gateway ${gateway.at(-1)!.toFixed(1)} ms, direct ${direct.at(-1)!.toFixed(1)} ms`);
    }
    const section = render(gateway, direct, pinning.describe);
    process.stdout.write(`${section}\n`);
    const doc = existsSync(OUT) ? readFileSync(OUT, 'utf8') : '';
    writeFileSync(OUT, mergeSection(doc, 'replay', section));
  } finally {
    await system?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:replay failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
