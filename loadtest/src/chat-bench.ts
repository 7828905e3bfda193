import { signAccessToken } from '@halo/kit/auth';
import { openSubscriber, type FanoutClient, type Subscriber } from './fanout-clients';
import { cpuMicros } from './pin';

/**
 * Subscription fan-out through the gateway: N subscribers (./fanout-clients.ts; each its own connection and
 * user, as N people in one chat would be) subscribe to one chat through the gateway; one sender
 * posts messages over HTTP through the gateway at a steady pace; each message carries its send
 * time, and every subscriber records publish → receive latency. Lost events are counted.
 *
 * Two selections: chat's own fields (relayed as they come) and `author { name }` (resolved from
 * content per event by the gateway).
 */
export interface FanoutOptions {
  gatewayUrl: string;
  jwtSecret: string;
  subscriberCounts: number[];
  messages: number;
  intervalMs: number;
  /** For the heading: what carries events between chat processes, and the database. */
  pubsub: string;
  log: (line: string) => void;
  /** One line on how load generator and servers shared the CPUs, for the section. */
  pinning?: string;
  /** Which client the subscribers are (./fanout-clients.ts); `ws` unless told. */
  client?: FanoutClient;
  /** The gateway's pid: its CPU time over the measured messages is logged (per message, all subscribers). */
  gatewayPid?: number;
}

/** The figure the summary table of `npm run bench` shows: the largest row with `author { name }`. */
export interface FanoutKey {
  subscribers: number;
  p95: number;
  lost: number;
}

interface FanoutRow {
  selection: string;
  subscribers: number;
  delivered: number;
  expected: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

const SELECTIONS = {
  'chat fields': 'id text createdAt',
  'with author { name } from content': 'id text author { name }',
} as const;

/** A `newMessage` event with chat's fields: an id, a text and a time. */
function checkChatFields(event: unknown): string | null {
  const m = (event as { data?: { newMessage?: Record<string, unknown> } } | null)?.data?.newMessage;
  if (!m || typeof m.id !== 'string' || typeof m.text !== 'string' || typeof m.createdAt !== 'string')
    return `incomplete: ${JSON.stringify(event)}`;
  return (event as { errors?: unknown }).errors ? `errors: ${JSON.stringify(event)}` : null;
}

/** A `newMessage` event with its author's name from content. */
function checkWithAuthor(event: unknown): string | null {
  const m = (event as { data?: { newMessage?: { id?: unknown; text?: unknown; author?: { name?: unknown } } } } | null)?.data?.newMessage;
  if (!m || typeof m.id !== 'string' || typeof m.text !== 'string' || typeof m.author?.name !== 'string')
    return `incomplete: ${JSON.stringify(event)}`;
  return (event as { errors?: unknown }).errors ? `errors: ${JSON.stringify(event)}` : null;
}

const SEND = 'mutation($c: ID!, $t: String!) { sendMessage(chatId: $c, text: $t) { id } }';
const now = () => performance.timeOrigin + performance.now();
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

const CLIENT_NOTE: Record<FanoutClient, string> = {
  ws: '`ws` with its own graphql-transport-ws handshake; the first copy of each message parsed and checked, every other copy compared byte for byte (since 2026-11-26; earlier rows used the graphql-ws client and are not comparable)',
  'graphql-ws': "the graphql-ws library's client, every copy parsed (as before 2026-11-26)",
  sse: 'Server-Sent Events at `/graphql/stream`, one HTTP connection each, checked as `ws`',
};

// eslint-disable-next-line max-lines-per-function -- a benchmark: its steps in the order they run
export async function benchFanout(opts: FanoutOptions): Promise<{ section: string; key: FanoutKey | null }> {
  const rows: FanoutRow[] = [];
  const client = opts.client ?? 'ws';
  const sender = signAccessToken({ sub: '1', name: 'bench', role: 'user' }, opts.jwtSecret, 3600);
  const send = async (chatId: string, text: string) => {
    const res = await fetch(`${opts.gatewayUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${sender}` },
      body: JSON.stringify({ query: SEND, variables: { c: chatId, t: text } }),
    });
    const body = (await res.json()) as { errors?: unknown };
    if (body.errors) throw new Error(`sendMessage failed: ${JSON.stringify(body.errors)}`);
  };

  for (const [label, selection] of Object.entries(SELECTIONS)) {
    for (const n of opts.subscriberCounts) {
      const chatId = `bench-${label.length}-${n}-${Date.now()}`;
      const subscribers: Subscriber[] = [];
      const open = (o: Parameters<typeof openSubscriber>[1]) => openSubscriber(client, o);
      /** Per message: the first copy received, checked; every other copy must be the same bytes. */
      const references = new Map<string, Buffer>();
      let wrong = 0;
      const latencies: number[] = [];
      const probesSeen = new Set<number>();
      /** Per message: the first subscriber's latency (the system's path), apart from the fan-out's spread. */
      const first = new Map<string, number>();
      let delivered = 0;
      try {
        for (let i = 0; i < n; i++) {
          const token = signAccessToken({ sub: String(2 + (i % 5000)), name: `subscriber ${i}`, role: 'user' }, opts.jwtSecret, 3600);
          subscribers.push(
            open({
              url: `${opts.gatewayUrl.replace(/^http/, 'ws')}/graphql`,
              token,
              query: `subscription($c: ID!) { newMessage(chatId: $c) { ${selection} } }`,
              chatId,
              check: selection.includes('author') ? checkWithAuthor : checkChatFields,
              references,
              on: {
                probe: () => void probesSeen.add(i),
                message: (text, at) => {
                  const latency = at - Number(text.slice(2));
                  latencies.push(latency);
                  if (!first.has(text)) first.set(text, latency);
                  delivered++;
                },
                wrong: (why) => {
                  if (wrong++ < 5) opts.log(`fan-out: subscriber ${i}: ${why}`);
                },
                failed: (why) => opts.log(`fan-out: subscriber ${i} failed: ${why}`),
              },
            }),
          );
        }
        // Every subscriber live before measuring: probes until each has heard one.
        const deadline = Date.now() + 60_000;
        while (probesSeen.size < n) {
          if (Date.now() > deadline) throw new Error(`only ${probesSeen.size}/${n} subscribers became live`);
          await send(chatId, `probe:${Date.now()}`);
          await new Promise((r) => setTimeout(r, 100));
        }
        await new Promise((r) => setTimeout(r, 200));
        const cpuAtStart = { gateway: opts.gatewayPid ? cpuMicros(opts.gatewayPid) : NaN, bench: process.cpuUsage() };
        for (let m = 0; m < opts.messages; m++) {
          await send(chatId, `t:${now()}`);
          await new Promise((r) => setTimeout(r, opts.intervalMs));
        }
        const expected = n * opts.messages;
        const settle = Date.now() + 10_000;
        while (delivered < expected && Date.now() < settle) await new Promise((r) => setTimeout(r, 50));
        // CPU per message (all its copies), sending included: from the first send until the last copy or the settle deadline.
        const benchCpu = process.cpuUsage(cpuAtStart.bench);
        const cpu = {
          gateway: (opts.gatewayPid ? cpuMicros(opts.gatewayPid) - cpuAtStart.gateway : NaN) / opts.messages / 1000,
          bench: (benchCpu.user + benchCpu.system) / opts.messages / 1000,
        };
        if (wrong > 0) throw new Error(`fan-out: ${wrong} wrong messages (see above)`);
        if (delivered > expected) throw new Error(`fan-out: ${delivered - expected} messages delivered twice`);
        latencies.sort((a, b) => a - b);
        const row = {
          selection: label,
          subscribers: n,
          delivered,
          expected,
          p50: pct(latencies, 50),
          p95: pct(latencies, 95),
          p99: pct(latencies, 99),
          max: latencies.at(-1) ?? NaN,
        };
        const firsts = [...first.values()].sort((a, b) => a - b);
        opts.log(
          `fan-out ${label} × ${n} (${client} client): p95 ${row.p95.toFixed(1)} ms, p50 ${row.p50.toFixed(1)} ms, ${expected - delivered} lost; ` +
            `first subscriber per message p50 ${pct(firsts, 50).toFixed(1)} ms, p95 ${pct(firsts, 95).toFixed(1)} ms; ` +
            `CPU per message: gateway ${cpu.gateway.toFixed(2)} ms, load generator ${cpu.bench.toFixed(2)} ms`,
        );
        rows.push(row);
      } finally {
        await Promise.all(subscribers.map((c) => c.close()));
      }
    }
  }

  const ms = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : '—');
  const withAuthor = rows.filter((r) => r.selection.startsWith('with author')).sort((a, b) => b.subscribers - a.subscribers)[0];
  const key = withAuthor
    ? { subscribers: withAuthor.subscribers, p95: withAuthor.p95, lost: withAuthor.expected - withAuthor.delivered }
    : null;
  const section = [
    `## Subscriptions: publish → receive through the gateway (${opts.pubsub})`,
    '',
    `- ${opts.messages} messages per row, one every ${opts.intervalMs} ms, sent with sendMessage over HTTP through the gateway; every subscriber its own WebSocket and user; goal p95 < 25 ms at 500 subscribers (issue 30; 50 ms before), 0 lost`,
    `- Date: ${new Date().toISOString()}`,
    ...(opts.pinning ? [`- CPUs: ${opts.pinning}`] : []),
    `- Subscribers: ${CLIENT_NOTE[client]} (BENCH_FANOUT_CLIENT=${client}; src/fanout-clients.ts)`,
    '',
    '| selection | subscribers | p50 ms | p95 ms | p99 ms | max ms | lost |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.selection} | ${r.subscribers} | ${ms(r.p50)} | ${ms(r.p95)} | ${ms(r.p99)} | ${ms(r.max)} | ${r.expected - r.delivered} |`,
    ),
    '',
  ].join('\n');
  return { section, key };
}
