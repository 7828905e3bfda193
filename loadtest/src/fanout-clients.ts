import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

/**
 * The fan-out bench's subscribers (src/chat-bench.ts): one WebSocket and one user each, all in
 * the bench's one process on one CPU. Two kinds, chosen with BENCH_FANOUT_CLIENT:
 *
 * - `ws` (the default since 2026-11-26): `ws` with the graphql-transport-ws handshake written
 *   here (connection_init, connection_ack, subscribe, pong). The first copy of each message any
 *   subscriber receives is parsed in full and checked; every other subscriber's copy must be
 *   byte for byte the same payload, under its own subscription id, or it counts as wrong. Only
 *   the message's text (its send time) is read without a parse. It costs the load generator less
 *   CPU per message than the `graphql-ws` client, so 500 subscribers on one core measure more of
 *   the system and less of the bench (docs/benchmarks.md, S5).
 * - `graphql-ws`: the graphql-ws library's client, as the bench used before (a full parse and
 *   validation of every message by every subscriber). Its figures are not comparable with the
 *   other's.
 * - `sse`: Server-Sent Events at `/graphql/stream`, one HTTP connection per subscriber, with the
 *   same checks as `ws` (`npm run bench:subscribers`).
 */
export type FanoutClient = 'ws' | 'graphql-ws' | 'sse';

export interface SubscriberEvents {
  /** A probe message (the bench waits until every subscriber has heard one). */
  probe(): void;
  /** A measured message: its text (`t:<send time>`) and when it arrived (ms since the epoch). */
  message(text: string, at: number): void;
  /** A message that is not what it should be. */
  wrong(why: string): void;
  /** The subscription or the socket failed. */
  failed(why: string): void;
}

export interface SubscriberOptions {
  url: string;
  token: string;
  query: string;
  chatId: string;
  /** Whether a parsed `newMessage` event is complete and correct; null, or what is wrong. */
  check: (event: unknown) => string | null;
  /** Per message text: the payload bytes of the first copy received, checked (shared by every subscriber of a row). */
  references: Map<string, Buffer>;
  on: SubscriberEvents;
}

export interface Subscriber {
  close(): Promise<void>;
}

const now = () => performance.timeOrigin + performance.now();
const TEXT = Buffer.from('"text":"');
const QUOTE = 0x22;

export function openSubscriber(kind: FanoutClient, o: SubscriberOptions): Subscriber {
  if (kind === 'sse') return sseSubscriber(o);
  return kind === 'graphql-ws' ? graphqlWsSubscriber(o) : wsSubscriber(o);
}

/** The text of a `newMessage` payload, read without parsing it (texts the bench sends have no escapes). */
function textOf(payload: Buffer): string | null {
  const at = payload.indexOf(TEXT);
  if (at < 0) return null;
  const start = at + TEXT.length;
  const end = payload.indexOf(QUOTE, start);
  return end < 0 ? null : payload.toString('latin1', start, end);
}

/**
 * One `next` payload (the GraphQL result's bytes) as a subscriber received it at `at`: a probe, a
 * measured message (the first copy of each parsed and checked, every other copy compared byte for
 * byte with it), or wrong.
 */
function onPayload(o: SubscriberOptions, payload: Buffer, at: number): void {
  const text = textOf(payload);
  if (text === null) return o.on.wrong(`a next payload without a text: ${payload.toString()}`);
  if (text.startsWith('probe:')) return o.on.probe();
  if (!text.startsWith('t:')) return;
  const reference = o.references.get(text);
  if (reference === undefined) {
    let why: string | null;
    try {
      why = o.check(JSON.parse(payload.toString()));
    } catch (err) {
      why = `not JSON: ${(err as Error).message}`;
    }
    if (why !== null) return o.on.wrong(why);
    o.references.set(text, Buffer.from(payload));
  } else if (!reference.equals(payload)) {
    return o.on.wrong(`a copy of ${text} differs from the first one: ${payload.toString()}`);
  }
  o.on.message(text, at);
}

/**
 * GraphQL over Server-Sent Events (`/graphql/stream`, graphql-sse's distinct connections mode):
 * one POST and one connection per subscriber, its own user in `Authorization`; each `next`
 * event's data goes through the same checks as a WebSocket payload.
 */
function sseSubscriber(o: SubscriberOptions): Subscriber {
  const url = new URL(o.url.replace(/^ws/, 'http').replace(/\/graphql$/, '/graphql/stream'));
  const body = JSON.stringify({ query: o.query, variables: { c: o.chatId } });
  let closed = false;
  const req = httpRequest(url, {
    method: 'POST',
    agent: false,
    headers: {
      accept: 'text/event-stream',
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      authorization: `Bearer ${o.token}`,
    },
  });
  const done = new Promise<void>((resolve) => req.once('close', () => resolve()));
  req.on('error', (err) => {
    if (!closed) o.on.failed(err.message);
  });
  req.on('response', (res) => {
    if (res.statusCode !== 200) {
      o.on.failed(`HTTP ${res.statusCode}`);
      res.resume();
      return;
    }
    let pending: Buffer = Buffer.alloc(0);
    res.on('data', (chunk: Buffer) => {
      const at = now();
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      // Events end with a blank line; `event: next` then `data: <result>` (one line: JSON has no raw newlines).
      for (let end = pending.indexOf(EVENT_END); end >= 0; end = pending.indexOf(EVENT_END)) {
        const event = pending.subarray(0, end);
        pending = pending.subarray(end + EVENT_END.length);
        if (event.indexOf(NEXT_EVENT) !== 0) {
          if (event.indexOf(COMPLETE_EVENT) === 0 && !closed) o.on.failed('the stream completed');
          continue;
        }
        const data = event.indexOf(DATA_FIELD);
        if (data < 0) {
          o.on.wrong(`a next event without data: ${event.toString()}`);
          continue;
        }
        onPayload(o, event.subarray(data + DATA_FIELD.length), at);
      }
    });
    res.on('error', (err) => {
      if (!closed) o.on.failed(err.message);
    });
  });
  req.end(body);
  return {
    close: () => {
      closed = true;
      req.destroy();
      return done;
    },
  };
}

const EVENT_END = Buffer.from('\n\n');
const NEXT_EVENT = Buffer.from('event: next\n');
const COMPLETE_EVENT = Buffer.from('event: complete');
const DATA_FIELD = Buffer.from('data: ');

function wsSubscriber(o: SubscriberOptions): Subscriber {
  const id = randomUUID();
  const head = Buffer.from(`{"id":"${id}","type":"next","payload":`);
  const socket = new WebSocket(o.url, 'graphql-transport-ws', { perMessageDeflate: false });
  socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${o.token}` } })));
  socket.on('error', (err) => o.on.failed(err.message));
  socket.on('close', (code, reason) => {
    if (code !== 1000) o.on.failed(`closed ${code} ${reason.toString()}`);
  });
  socket.on('message', (data: Buffer) => {
    const at = now();
    if (data.length > head.length + 1 && data.compare(head, 0, head.length, 0, head.length) === 0 && data.at(-1) === 0x7d) {
      return onPayload(o, data.subarray(head.length, data.length - 1), at);
    }
    // Anything else is a protocol message: parsed.
    const message = JSON.parse(data.toString()) as { type?: string; id?: string; payload?: unknown };
    switch (message.type) {
      case 'connection_ack':
        return socket.send(JSON.stringify({ id, type: 'subscribe', payload: { query: o.query, variables: { c: o.chatId } } }));
      case 'ping':
        return socket.send('{"type":"pong"}');
      case 'pong':
        return;
      case 'next':
        return o.on.wrong(`a next message not for this subscription (${id}): ${data.toString()}`);
      default:
        return o.on.failed(data.toString());
    }
  });
  return {
    close: () =>
      new Promise<void>((resolve) => {
        if (socket.readyState === WebSocket.CLOSED) return resolve();
        socket.once('close', () => resolve());
        if (socket.readyState === WebSocket.OPEN) socket.close(1000);
        else socket.terminate();
      }),
  };
}

/** The graphql-ws library's client, as before: every message parsed and checked by every subscriber. */
function graphqlWsSubscriber(o: SubscriberOptions): Subscriber {
  const client = createClient({
    url: o.url,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${o.token}` },
    retryAttempts: 0,
  });
  client.subscribe(
    { query: o.query, variables: { c: o.chatId } },
    {
      next: (event) => {
        const at = now();
        const text = (event.data as { newMessage?: { text?: string } } | null)?.newMessage?.text ?? '';
        if (text.startsWith('probe:')) return o.on.probe();
        if (!text.startsWith('t:')) return;
        const why = o.check(event);
        if (why !== null) return o.on.wrong(why);
        o.on.message(text, at);
      },
      error: (err) => o.on.failed(JSON.stringify(err)),
      complete: () => undefined,
    },
  );
  return { close: async () => void (await client.dispose()) };
}
