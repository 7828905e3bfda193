import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { signAccessToken } from '@halo/kit';

/**
 * Subscription fan-out through the gateway: N graphql-ws clients (each its own connection and
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

const SEND = 'mutation($c: ID!, $t: String!) { sendMessage(chatId: $c, text: $t) { id } }';
const now = () => performance.timeOrigin + performance.now();
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

// eslint-disable-next-line max-lines-per-function -- a benchmark: its steps in the order they run
export async function benchFanout(opts: FanoutOptions): Promise<{ section: string; key: FanoutKey | null }> {
  const rows: FanoutRow[] = [];
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
      const clients: Client[] = [];
      const latencies: number[] = [];
      const probesSeen = new Set<number>();
      /** Per message: the first subscriber's latency (the system's path), apart from the fan-out's spread. */
      const first = new Map<string, number>();
      let delivered = 0;
      try {
        for (let i = 0; i < n; i++) {
          const token = signAccessToken({ sub: String(2 + (i % 5000)), name: `subscriber ${i}`, role: 'user' }, opts.jwtSecret, 3600);
          const client = createClient({
            url: `${opts.gatewayUrl.replace(/^http/, 'ws')}/graphql`,
            webSocketImpl: WebSocket,
            connectionParams: { authorization: `Bearer ${token}` },
            retryAttempts: 0,
          });
          clients.push(client);
          client.subscribe(
            { query: `subscription($c: ID!) { newMessage(chatId: $c) { ${selection} } }`, variables: { c: chatId } },
            {
              next: (event) => {
                const text = (event.data as { newMessage?: { text?: string } } | null)?.newMessage?.text ?? '';
                if (text.startsWith('probe:')) return void probesSeen.add(i);
                if (!text.startsWith('t:')) return;
                const latency = now() - Number(text.slice(2));
                latencies.push(latency);
                if (!first.has(text)) first.set(text, latency);
                delivered++;
              },
              error: (err) => opts.log(`fan-out: subscriber ${i} failed: ${JSON.stringify(err)}`),
              complete: () => undefined,
            },
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
        for (let m = 0; m < opts.messages; m++) {
          await send(chatId, `t:${now()}`);
          await new Promise((r) => setTimeout(r, opts.intervalMs));
        }
        const expected = n * opts.messages;
        const settle = Date.now() + 10_000;
        while (delivered < expected && Date.now() < settle) await new Promise((r) => setTimeout(r, 50));
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
          `fan-out ${label} × ${n}: p95 ${row.p95.toFixed(1)} ms, p50 ${row.p50.toFixed(1)} ms, ${expected - delivered} lost; ` +
            `first subscriber per message p50 ${pct(firsts, 50).toFixed(1)} ms, p95 ${pct(firsts, 95).toFixed(1)} ms`,
        );
        rows.push(row);
      } finally {
        await Promise.all(clients.map((c) => Promise.resolve(c.dispose())));
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
    `- ${opts.messages} messages per row, one every ${opts.intervalMs} ms, sent with sendMessage over HTTP through the gateway; every subscriber its own WebSocket and user; goal p95 < 50 ms at 500 subscribers, 0 lost`,
    `- Date: ${new Date().toISOString()}`,
    ...(opts.pinning ? [`- CPUs: ${opts.pinning}`] : []),
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
