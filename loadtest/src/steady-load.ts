import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { signAccessToken } from '@halo/kit/auth';

/**
 * Open-loop traffic at a fixed rate (requests are sent on schedule whether or not earlier ones
 * have answered, as real clients do), mixing GraphQL and REST through the gateway, and open
 * subscriptions fed by a steady sender. Everything that fails is counted with its reason.
 */
export interface LoadCounters {
  sent: number;
  ok: number;
  failed: number;
  /** First few failure reasons, for the report. */
  reasons: Map<string, number>;
}

const GRAPHQL = '{ products(limit: 5) { data { id name price } } }';
const REST = ['/products?limit=5', '/api/v2/products?limit=5', '/products/1'];

export function startSteadyLoad(opts: { gatewayUrl: string; ratePerSecond: number }) {
  const counters: LoadCounters = { sent: 0, ok: 0, failed: 0, reasons: new Map() };
  const fail = (reason: string) => {
    counters.failed++;
    counters.reasons.set(reason, (counters.reasons.get(reason) ?? 0) + 1);
  };
  let n = 0;
  const one = async () => {
    const i = n++;
    counters.sent++;
    try {
      if (i % 2 === 0) {
        const res = await fetch(`${opts.gatewayUrl}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'apollographql-client-name': 'bench-publish' },
          body: JSON.stringify({ query: GRAPHQL }),
        });
        const body = (await res.json()) as { errors?: { extensions?: { code?: string } }[] };
        if (res.status !== 200 || body.errors) return fail(`graphql ${res.status} ${body.errors?.[0]?.extensions?.code ?? ''}`.trim());
      } else {
        const path = REST[(i >> 1) % REST.length]!;
        const res = await fetch(`${opts.gatewayUrl}${path}`);
        await res.arrayBuffer();
        if (res.status !== 200) return fail(`rest ${path} ${res.status}`);
      }
      counters.ok++;
    } catch (err) {
      fail(`network ${(err as Error).message}`);
    }
  };
  // A tick every 10 ms sends what the schedule owes, so the rate holds even when a tick is late.
  const started = performance.now();
  const inFlight = new Set<Promise<void>>();
  const timer = setInterval(() => {
    const owed = Math.floor(((performance.now() - started) / 1000) * opts.ratePerSecond) - counters.sent;
    for (let k = 0; k < owed; k++) {
      const p = one().finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
  }, 10);
  return {
    counters,
    async stop(): Promise<{ seconds: number }> {
      clearInterval(timer);
      await Promise.all(inFlight);
      return { seconds: (performance.now() - started) / 1000 };
    },
  };
}

export interface SubscriptionCounters {
  open: number;
  /** Subscriptions that ended (an error or complete), with why. */
  ended: number;
  reasons: Map<string, number>;
  events: number;
}

/** `count` subscriptions to one chat through the gateway, each its own connection and user, and a sender. */
export function openSubscriptions(opts: { gatewayUrl: string; jwtSecret: string; count: number; sendEveryMs: number }) {
  const chatId = `bench-publish-${Date.now()}`;
  const counters: SubscriptionCounters = { open: 0, ended: 0, reasons: new Map(), events: 0 };
  const clients: Client[] = [];
  const lastSeen: string[] = [];
  for (let i = 0; i < opts.count; i++) {
    const token = signAccessToken({ sub: String(1000 + i), name: `bench ${i}`, role: 'user' }, opts.jwtSecret, 3600);
    const client = createClient({
      url: `${opts.gatewayUrl.replace(/^http/, 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${token}`, 'apollographql-client-name': 'bench-subscriber' },
      retryAttempts: 0,
      shouldRetry: () => false,
    });
    clients.push(client);
    const end = (why: string) => {
      counters.ended++;
      counters.reasons.set(why, (counters.reasons.get(why) ?? 0) + 1);
    };
    client.subscribe(
      { query: 'subscription($c: ID!) { newMessage(chatId: $c) { id text author { name } } }', variables: { c: chatId } },
      {
        next: (v) => {
          counters.events++;
          lastSeen[i] = (v.data as { newMessage?: { text?: string } } | null)?.newMessage?.text ?? '';
        },
        error: (e) => end(`error ${JSON.stringify(e).slice(0, 120)}`),
        complete: () => end('complete'),
      },
    );
    counters.open++;
  }
  const sender = signAccessToken({ sub: '1', name: 'bench sender', role: 'user' }, opts.jwtSecret, 3600);
  let seq = 0;
  const send = () =>
    fetch(`${opts.gatewayUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${sender}` },
      body: JSON.stringify({
        query: 'mutation($c: ID!, $t: String!) { sendMessage(chatId: $c, text: $t) { id } }',
        variables: { c: chatId, t: `m${++seq}` },
      }),
    }).then(
      (r) => r.arrayBuffer(),
      () => undefined,
    );
  const timer = setInterval(() => void send(), opts.sendEveryMs);
  return {
    counters,
    /** How many subscribers got the last message sent (all of them: every subscription is alive). */
    async lastDelivered(): Promise<number> {
      clearInterval(timer);
      await new Promise((r) => setTimeout(r, 1_000));
      await send();
      await new Promise((r) => setTimeout(r, 2_000));
      return lastSeen.filter((t) => t === `m${seq}`).length;
    },
    async close() {
      clearInterval(timer);
      await Promise.all(clients.map((c) => Promise.resolve(c.dispose())));
    },
  };
}
