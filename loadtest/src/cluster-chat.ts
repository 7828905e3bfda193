import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import type { Caller } from './callers';
import { call, type Recorder } from './cluster-load';

/**
 * Chat under `npm run bench:cluster`: a few subscribers, each its own WebSocket (graphql-transport-ws)
 * through the front nginx to a gateway, on one chat, and one sender at a steady pace. A subscriber
 * whose socket closes or whose subscription errors or completes (its gateway or chat replica was
 * killed) opens a new socket and resumes with `newMessage(chatId, after: <last id received>)`: the
 * chat service replays what it missed from storage, then goes live (services/chat/schema.graphql).
 * At the end, every message the sender saw stored must have reached every subscriber exactly once.
 */
const SUBSCRIBE = 'subscription($c: ID!, $a: ID) { newMessage(chatId: $c, after: $a) { id text } }';
const SEND = 'mutation($c: ID!, $t: String!) { sendMessage(chatId: $c, text: $t) { id } }';
/** How long a subscriber waits before it reconnects. */
const RECONNECT_MS = 300;

export interface SubscriberReport {
  name: string;
  received: number;
  /** Sent (confirmed) but never received. */
  lost: number;
  /** Received more than once. */
  duplicates: number;
  /** New sockets after the first, each resumed after the last id received. */
  resumes: number;
  /** Why each reconnect happened (first few). */
  why: string[];
}

export interface ChatReport {
  chatId: string;
  /** sendMessage answered with an id. */
  sent: number;
  /** sendMessage failed or timed out (the message may or may not have been stored). */
  sendFailed: number;
  subscribers: SubscriberReport[];
  /** Largest lost count of any subscriber. */
  lost: number;
}

interface ChatSubscriber {
  name: string;
  received: Map<string, number>;
  resumes: number;
  why: string[];
  /** Has received at least one message (live). */
  live(): boolean;
  close(): void;
}

function subscribe(wsUrl: string, caller: Caller, chatId: string, name: string): ChatSubscriber {
  let last: string | null = null;
  let closed = false;
  /** Closed for good (the run is over): no more reconnects. */
  let ended = false;
  let socket: WebSocket;
  const sub: ChatSubscriber = {
    name,
    received: new Map(),
    resumes: 0,
    why: [],
    live: () => last !== null,
    close() {
      ended = closed = true;
      socket.terminate();
    },
  };
  const again = (why: string) => {
    if (closed) return;
    if (sub.why.length < 5) sub.why.push(why);
    closed = true; // this socket's own events from now on are ignored
    socket.terminate();
    setTimeout(() => {
      if (ended) return;
      closed = false;
      sub.resumes++;
      open();
    }, RECONNECT_MS);
  };
  const open = () => {
    const id = randomUUID();
    const s = new WebSocket(wsUrl, 'graphql-transport-ws', { perMessageDeflate: false });
    socket = s;
    const mine = (f: () => void) => () => socket === s && !closed && f();
    s.on(
      'open',
      mine(() => s.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${caller.token}` } }))),
    );
    s.on('error', (err) => mine(() => again(`socket error: ${err.message}`))());
    s.on('close', (code) => mine(() => again(`socket closed ${code}`))());
    s.on('message', (data: Buffer) =>
      mine(() => {
        const m = JSON.parse(data.toString()) as { type: string; payload?: { data?: { newMessage?: { id: string } } } };
        if (m.type === 'connection_ack')
          s.send(JSON.stringify({ id, type: 'subscribe', payload: { query: SUBSCRIBE, variables: { c: chatId, a: last } } }));
        else if (m.type === 'ping') s.send('{"type":"pong"}');
        else if (m.type === 'next' && m.payload?.data?.newMessage) {
          const msgId = m.payload.data.newMessage.id;
          sub.received.set(msgId, (sub.received.get(msgId) ?? 0) + 1);
          last = msgId;
        } else if (m.type === 'next' || m.type === 'error' || m.type === 'complete') again(`${m.type}: ${JSON.stringify(m.payload ?? {})}`);
      })(),
    );
  };
  open();
  return sub;
}

export interface ChatLoad {
  /** Resolves when the sender stopped and every subscriber had time to catch up. */
  finish(): Promise<ChatReport>;
}

/** Subscribers live (each has received a probe), then the sender at `perSecond` until `stopped()`. */
export async function startChat(opts: {
  front: string;
  callers: readonly Caller[];
  subscribers: number;
  perSecond: number;
  rec: Recorder;
  stopped: () => boolean;
  log: (line: string) => void;
}): Promise<ChatLoad> {
  const chatId = `cluster-${Date.now()}`;
  const wsUrl = `${opts.front.replace(/^http/, 'ws')}/graphql`;
  const subs = Array.from({ length: opts.subscribers }, (_, i) =>
    subscribe(wsUrl, opts.callers[i % opts.callers.length]!, chatId, `subscriber ${i + 1}`),
  );
  const sender = opts.callers.at(-1)!;
  const send = async (text: string) => {
    const r = await call(`${opts.front}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${sender.token}` },
      body: JSON.stringify({ query: SEND, variables: { c: chatId, t: text } }),
    });
    if ('error' in r) return { ms: r.ms, why: r.error };
    if (r.status !== 200) return { ms: r.ms, why: `HTTP ${r.status}` };
    const body = JSON.parse(r.body) as { data?: { sendMessage?: { id: string } }; errors?: { message?: string }[] };
    const id = body.data?.sendMessage?.id;
    return id ? { ms: r.ms, id } : { ms: r.ms, why: `errors: ${body.errors?.[0]?.message?.slice(0, 80) ?? ''}` };
  };
  const deadline = Date.now() + 60_000;
  while (!subs.every((s) => s.live())) {
    if (Date.now() > deadline) throw new Error(`chat: only ${subs.filter((s) => s.live()).length}/${subs.length} subscribers became live`);
    await send(`probe:${Date.now()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  opts.log(`cluster: ${subs.length} chat subscribers live on ${chatId}`);
  const sent: string[] = [];
  let sendFailed = 0;
  // On a steady clock, not after each answer: a slow answer (a replica being killed) does not slow the pace.
  const sends: Promise<void>[] = [];
  const sending = (async () => {
    const every = 1000 / opts.perSecond;
    for (let n = 0, next = Date.now(); !opts.stopped(); n++) {
      sends.push(
        send(`m:${n}`).then((r) => {
          opts.rec.record('chat-send', 'id' in r, r.ms, 'why' in r ? r.why : undefined);
          if ('id' in r && r.id) sent.push(r.id);
          else sendFailed++;
        }),
      );
      next += every;
      await new Promise((res) => setTimeout(res, Math.max(0, next - Date.now())));
    }
    await Promise.all(sends);
  })();
  return {
    async finish() {
      await sending;
      // Up to 20 s for the stragglers (a subscriber that is resuming replays what it missed).
      const settle = Date.now() + 20_000;
      while (Date.now() < settle && !subs.every((s) => sent.every((id) => s.received.has(id))))
        await new Promise((r) => setTimeout(r, 200));
      for (const s of subs) s.close();
      const reports = subs.map((s) => ({
        name: s.name,
        received: sent.filter((id) => s.received.has(id)).length,
        lost: sent.filter((id) => !s.received.has(id)).length,
        duplicates: [...s.received.values()].reduce((a, c) => a + c - 1, 0),
        resumes: s.resumes,
        why: s.why,
      }));
      return { chatId, sent: sent.length, sendFailed, subscribers: reports, lost: Math.max(0, ...reports.map((r) => r.lost)) };
    },
  };
}
