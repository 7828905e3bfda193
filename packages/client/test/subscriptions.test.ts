import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildSchema, GraphQLError } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import WebSocket, { WebSocketServer } from 'ws';
import {
  createHaloClient,
  GraphQLRequestError,
  SignedOutError,
  SubscriptionClosedError,
  type GraphQLResult,
  type HaloClient,
} from '../src';
import { SDK_VERSION } from '../src/version';
import { json, until } from './servers';

/**
 * Subscriptions against a real graphql-ws server that behaves like the gateway's
 * (gateway/src/subscriptions/): the token in `connection_init`, 4401 for a refused or expired
 * token, `error` frames with `extensions.code`. The same port serves `POST /auth/refresh`.
 */
const schema = buildSchema(`
  type Query { ok: Boolean }
  type Message { id: ID! chatId: ID! text: String! }
  type Subscription { newMessage(chatId: ID!): Message! }
`);

type Message = { id: string; chatId: string; text: string };

class Hub {
  private readonly listeners = new Set<(m: Message) => void>();
  get size() {
    return this.listeners.size;
  }
  publish(m: Message) {
    for (const l of this.listeners) l(m);
  }
  /** An async iterator of one chat's messages, as `{ newMessage }` events. */
  iterate(chatId: string): AsyncIterableIterator<{ newMessage: Message }> {
    const queue: Message[] = [];
    let wake: (() => void) | null = null;
    let done = false;
    const listener = (m: Message) => {
      if (m.chatId !== chatId) return;
      queue.push(m);
      wake?.();
    };
    this.listeners.add(listener);
    const it: AsyncIterableIterator<{ newMessage: Message }> = {
      [Symbol.asyncIterator]: () => it,
      next: async () => {
        while (!queue.length && !done) await new Promise<void>((r) => (wake = r));
        if (done) return { done: true, value: undefined };
        return { done: false, value: { newMessage: queue.shift()! } };
      },
      return: async () => {
        done = true;
        this.listeners.delete(listener);
        wake?.();
        return { done: true, value: undefined };
      },
    };
    return it;
  }
}

class WsServer {
  hub = new Hub();
  valid = new Set(['tok-1']);
  initPayloads: unknown[] = [];
  refreshCalls = 0;
  refreshAnswer: 'ok' | 'refuse' = 'ok';
  /** The next subscribe attempts answered with an `error` frame of this code. */
  refuseNext: { code: string; times: number } | null = null;
  http!: Server;
  wss!: WebSocketServer;
  port = 0;
  private n = 1;

  async start(port = 0): Promise<this> {
    this.http = createServer((req, res) => {
      if (req.url !== '/auth/refresh') return json(res, 404, { error: 'Not found' });
      this.refreshCalls++;
      if (this.refreshAnswer === 'refuse') return json(res, 401, { error: 'Invalid refresh token' });
      const token = `tok-${++this.n}`;
      this.valid.add(token);
      json(res, 200, { token, accessToken: token });
    });
    this.wss = new WebSocketServer({ server: this.http, path: '/graphql' });
    useServer(
      {
        schema,
        roots: { subscription: { newMessage: ({ chatId }: { chatId: string }) => this.hub.iterate(chatId) } },
        onConnect: (ctx) => {
          this.initPayloads.push(ctx.connectionParams);
          const auth = ctx.connectionParams?.authorization;
          if (typeof auth !== 'string' || !this.valid.has(auth.replace(/^Bearer /, ''))) {
            ctx.extra.socket.close(4401, 'Unauthorized');
            return false;
          }
          return true;
        },
        onSubscribe: () => {
          if (this.refuseNext && this.refuseNext.times > 0) {
            this.refuseNext.times--;
            return [new GraphQLError(`refused: ${this.refuseNext.code}`, { extensions: { code: this.refuseNext.code } })];
          }
          return undefined;
        },
      },
      this.wss,
    );
    await new Promise<void>((resolve) => this.http.listen(port, '127.0.0.1', resolve));
    this.port = (this.http.address() as AddressInfo).port;
    return this;
  }

  get url() {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Every open socket closed as the gateway does when the token expires. */
  expireTokens() {
    this.valid.clear();
    for (const ws of this.wss.clients) ws.close(4401, 'Token expired');
  }

  async stop() {
    for (const ws of this.wss.clients) ws.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    this.http.closeAllConnections();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }
}

let srv: WsServer;
let halo: HaloClient;
const waits: number[] = [];
const connected: boolean[] = [];
const closed: number[] = [];
let stopCounting = () => {};

beforeEach(async () => {
  srv = await new WsServer().start();
  waits.length = 0;
  connected.length = 0;
  closed.length = 0;
  // Only this test's client counts: the last test's socket may report its close after this point.
  let current = true;
  stopCounting = () => (current = false);
  halo = createHaloClient({
    baseUrl: srv.url,
    accessToken: 'tok-1',
    // Real but short waits: the reconnect backoff is recorded, and waited for at most 20 ms.
    sleep: (ms) => {
      waits.push(ms);
      return new Promise((r) => setTimeout(r, Math.min(ms, 20)));
    },
    subscriptions: {
      webSocketImpl: WebSocket,
      onConnected: (reconnected) => void (current && connected.push(reconnected)),
      onClosed: (e) => void (current && closed.push((e as { code: number }).code)),
    },
  });
});

afterEach(async () => {
  stopCounting();
  await halo.close();
  await srv.stop();
});

interface Collected {
  events: GraphQLResult<{ newMessage: Message }>[];
  errors: unknown[];
  completed: boolean;
  stop: () => void;
}

function collect(chatId: string): Collected {
  const c: Collected = { events: [], errors: [], completed: false, stop: () => undefined };
  c.stop = halo.graphql.subscribe<{ newMessage: Message }, { c: string }>(
    'subscription($c: ID!) { newMessage(chatId: $c) { id chatId text } }',
    { c: chatId },
    { next: (r) => void c.events.push(r), error: (e) => void c.errors.push(e), complete: () => void (c.completed = true) },
  );
  return c;
}

const texts = (c: Collected) => c.events.map((e) => e.data?.newMessage.text);

/** What the SDK names itself with by default, in every connection_init (./client-info.test.ts). */
const SDK_INFO = { 'apollographql-client-name': '@halo/client', 'apollographql-client-version': SDK_VERSION };

it('sends the token and the client name and version in connection_init and delivers events of its chat only', async () => {
  const c = collect('general');
  await until('the subscription', () => srv.hub.size === 1);
  expect(srv.initPayloads).toEqual([{ ...SDK_INFO, authorization: 'Bearer tok-1' }]);
  srv.hub.publish({ id: '1', chatId: 'general', text: 'halo' });
  srv.hub.publish({ id: '2', chatId: 'other', text: 'nope' });
  srv.hub.publish({ id: '3', chatId: 'general', text: 'lagi' });
  await until('two events', () => c.events.length === 2);
  expect(texts(c)).toEqual(['halo', 'lagi']);
  c.stop();
  await until('the upstream to end', () => srv.hub.size === 0);
});

it('iterate() yields the events; breaking out unsubscribes', async () => {
  const it = halo.graphql.iterate<{ newMessage: Message }>('subscription { newMessage(chatId: "x") { id chatId text } }');
  const got: string[] = [];
  const reading = (async () => {
    for await (const r of it) {
      got.push(r.data!.newMessage.text);
      if (got.length === 2) break;
    }
  })();
  await until('the subscription', () => srv.hub.size === 1);
  srv.hub.publish({ id: '1', chatId: 'x', text: 'a' });
  srv.hub.publish({ id: '2', chatId: 'x', text: 'b' });
  await reading;
  expect(got).toEqual(['a', 'b']);
  await until('the upstream to end', () => srv.hub.size === 0);
});

it('on 4401 (token expired) renews the token ONCE for all subscriptions and reconnects with the new one', async () => {
  const a = collect('a');
  const b = collect('b');
  await until('both subscriptions', () => srv.hub.size === 2);
  srv.expireTokens();
  await until('both resubscribed', () => srv.hub.size === 2 && srv.initPayloads.length === 2, 5_000);
  expect(srv.refreshCalls).toBe(1);
  expect(halo.accessToken).toBe('tok-2');
  expect(srv.initPayloads[1]).toEqual({ ...SDK_INFO, authorization: 'Bearer tok-2' });
  expect(closed).toEqual([4401]);
  srv.hub.publish({ id: '1', chatId: 'a', text: 'after renewal' });
  srv.hub.publish({ id: '2', chatId: 'b', text: 'also' });
  await until('both events', () => a.events.length === 1 && b.events.length === 1);
  expect(a.errors).toEqual([]);
  expect(b.errors).toEqual([]);
});

it('on 4401 with a refused renewal, ends every subscription with SignedOutError and clears the token', async () => {
  const a = collect('a');
  await until('the subscription', () => srv.hub.size === 1);
  srv.refreshAnswer = 'refuse';
  srv.expireTokens();
  await until('the error', () => a.errors.length === 1);
  expect(a.errors[0]).toBeInstanceOf(SignedOutError);
  expect(halo.accessToken).toBeNull();
  expect(srv.refreshCalls).toBe(1);
});

it('a 4401 right after a renewal (the new token is refused too) ends the subscription instead of looping', async () => {
  const a = collect('a');
  await until('the subscription', () => srv.hub.size === 1);
  // Every token, old and new, is refused from now on.
  srv.valid.clear();
  const add = srv.valid.add.bind(srv.valid);
  srv.valid.add = () => srv.valid; // the refreshed token is not accepted either
  try {
    srv.expireTokens();
    await until('the error', () => a.errors.length === 1);
  } finally {
    srv.valid.add = add;
  }
  expect(a.errors[0]).toBeInstanceOf(SubscriptionClosedError);
  expect(a.errors[0]).toMatchObject({ code: 4401 });
  expect(srv.refreshCalls).toBe(1);
});

it('reconnects and resubscribes by itself after the server goes away and comes back on the same port', async () => {
  const a = collect('general');
  await until('the subscription', () => srv.hub.size === 1);
  const port = srv.port;
  await srv.stop();
  srv = await new WsServer().start(port);
  await until('the resubscription', () => srv.hub.size === 1, 10_000);
  srv.hub.publish({ id: '9', chatId: 'general', text: 'back' });
  await until('the event', () => a.events.length === 1);
  expect(texts(a)).toEqual(['back']);
  expect(a.errors).toEqual([]);
  expect(waits.length).toBeGreaterThan(0); // the reconnect went through the backoff
  expect(connected[0]).toBe(false);
  expect(connected.at(-1)).toBe(true);
  expect(closed[0]).toBe(1006); // terminated: an abnormal closure
});

it('gives up after the configured reconnect attempts with SubscriptionClosedError', async () => {
  await halo.close();
  halo = createHaloClient({
    baseUrl: srv.url,
    accessToken: 'tok-1',
    sleep: async () => undefined,
    subscriptions: { webSocketImpl: WebSocket, reconnect: { attempts: 2 } },
  });
  const a = collect('general');
  await until('the subscription', () => srv.hub.size === 1);
  await srv.stop();
  await until('the error', () => a.errors.length === 1, 10_000);
  expect(a.errors[0]).toBeInstanceOf(SubscriptionClosedError);
  srv = await new WsServer().start(); // for afterEach
});

it('subscribes again after an error frame with a passing cause (UNAVAILABLE)', async () => {
  srv.refuseNext = { code: 'UNAVAILABLE', times: 2 };
  const a = collect('general');
  await until('the subscription', () => srv.hub.size === 1, 5_000);
  srv.hub.publish({ id: '1', chatId: 'general', text: 'ok' });
  await until('the event', () => a.events.length === 1);
  expect(a.errors).toEqual([]);
  expect(waits).toEqual([expect.any(Number), expect.any(Number)]);
  expect(waits[1]!).toBeGreaterThan(waits[0]!); // backoff grows
});

it('ends the subscription with GraphQLRequestError and its code for any other error frame', async () => {
  srv.refuseNext = { code: 'BAD_USER_INPUT', times: 1 };
  const a = collect('general');
  await until('the error', () => a.errors.length === 1);
  expect(a.errors[0]).toBeInstanceOf(GraphQLRequestError);
  expect((a.errors[0] as GraphQLRequestError).codes).toEqual(['BAD_USER_INPUT']);
});
