import { signAccessToken } from '@halo/kit/auth';
import { openRedis, redisReady, type Db, type Redis } from '@halo/kit/db';
import { SUBSCRIPTIONS_GAUGE } from '@halo/kit/graphql';
import { createLogger } from '@halo/kit/logging';
import { postGraphQL, startTestService, TEST_JWT_SECRET, TEST_SERVICE_ENV, testIdentityEnv, type TestService } from '@halo/kit/testing';
import { createClient, type Client, type FormattedExecutionResult } from 'graphql-ws';
import WebSocket from 'ws';
import { chatService, type ChatService } from '../src/service';

export type TestChat = TestService<ChatService>;

/** The real Redis the suites use (CI starts it; see README). */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
/** A Redis address where nothing listens: "Redis is down", without stopping the shared server. */
export const CLOSED_REDIS_URL = 'redis://127.0.0.1:1';

export const testConfig = (extra: Record<string, string> = {}) =>
  chatService.loadConfig({ ...TEST_SERVICE_ENV, ...testIdentityEnv('chat'), ...extra });

/** The real service, in-process, on a throwaway Postgres schema of its own (one per test file). */
export const startTestChat = (extra: Record<string, string> = {}): Promise<TestChat> => startTestService(chatService, extra);

/**
 * Another replica of a running test service: its own HTTP server, WebSockets and Redis clients,
 * on the SAME schema, so the same Redis namespace (`halo:<schema>:`).
 */
export async function startReplica(t: TestChat, extra: Record<string, string> = {}) {
  const service = await chatService.start(testConfig(extra), createLogger('chat', 'silent'), { db: t.db });
  return { service, base: `http://127.0.0.1:${service.httpPort}`, stop: () => service.stop() };
}

/** `Authorization` as auth issues it for a user. */
export const bearer = (id: number, ttlSeconds = 300) =>
  `Bearer ${signAccessToken({ sub: String(id), name: `user${id}`, role: 'user' }, TEST_JWT_SECRET, ttlSeconds)}`;
export const AS = (id: number) => ({ authorization: bearer(id) });

export const gql = postGraphQL;

export const SEND = `mutation ($chatId: ID!, $text: String!) { sendMessage(chatId: $chatId, text: $text) { id chatId text createdAt author { id } } }`;
export const NEW_MESSAGE = `subscription ($chatId: ID!) { newMessage(chatId: $chatId) { id chatId text createdAt author { id } } }`;
/** newMessage resumed after a message id (`after` in the extra variables). */
export const RESUME = `subscription ($chatId: ID!, $after: ID) { newMessage(chatId: $chatId, after: $after) { id chatId text createdAt author { id } } }`;
export const MESSAGES = `query ($chatId: ID!, $first: Int, $after: String) {
  messages(chatId: $chatId, first: $first, after: $after) { edges { cursor node { id text author { id } } } pageInfo { hasNextPage endCursor } }
}`;

export interface MessageView {
  id: string;
  chatId: string;
  text: string;
  createdAt: string;
  author: { id: string } | null;
}

/** sendMessage over HTTP as user `as`; the message, or throws with the errors. */
export async function send(base: string, chatId: string, text: string, as = 1): Promise<MessageView> {
  const res = await gql<{ sendMessage: MessageView }>(base, SEND, { chatId, text }, AS(as));
  if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
  return res.body.data!.sendMessage;
}

/** A graphql-ws client of one service (the `ws` package as its WebSocket), that records how its sockets closed. */
export function wsClient(base: string, params: Record<string, unknown> = {}) {
  const closes: { code: number; reason: string }[] = [];
  const client: Client = createClient({
    url: `${base.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: params,
    retryAttempts: 0,
    on: { closed: (e) => void closes.push({ code: (e as { code: number }).code, reason: String((e as { reason: unknown }).reason) }) },
  });
  return { client, closes, dispose: () => client.dispose() };
}

/** One subscription's observations: what it received, how it ended. */
export function subscribe(client: Client, chatId: string, query = NEW_MESSAGE, extra: Record<string, unknown> = {}) {
  const sub = {
    events: [] as MessageView[],
    results: [] as FormattedExecutionResult<{ newMessage: MessageView }, unknown>[],
    error: undefined as unknown,
    completed: false,
    unsubscribe: () => undefined as void,
  };
  sub.unsubscribe = client.subscribe<{ newMessage: MessageView }>(
    { query, variables: { chatId, ...extra } },
    {
      next: (result) => {
        sub.results.push(result);
        if (result.data?.newMessage) sub.events.push(result.data.newMessage);
      },
      error: (err) => void (sub.error = err),
      complete: () => void (sub.completed = true),
    },
  );
  return sub;
}

/** Polls `check` until it is true (or fails after `timeoutMs`, naming `what`). */
export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The `halo_graphql_subscriptions` gauge as the service's `/metrics` shows it. */
export async function openSubscriptions(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const m = new RegExp(`^${SUBSCRIPTIONS_GAUGE}\\{[^}]*\\} (\\d+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

/** Until `n` subscriptions are established on the service (subscribed in Redis): "from now on" has begun. */
export const subscriptionsOpen = (base: string, n: number) =>
  until(`${n} open subscriptions`, async () => (await openSubscriptions(base)) === n);

/** A Redis client for the test itself; close it with `disconnect()`. */
export async function testRedis(url = TEST_REDIS_URL): Promise<Redis> {
  const redis = openRedis(url, createLogger('test', 'silent'), { enableOfflineQueue: true });
  if (!(await redisReady(redis))) throw new Error(`Redis is not reachable at ${url}`);
  return redis;
}

/** The Redis channel of a chat, as the service names it. */
export const channelOf = (db: Db, chatId: string) => `halo:${db.schema}:chat:${chatId}`;

/** How many connections are subscribed to a chat's channel (PUBSUB NUMSUB). */
export async function numsub(redis: Redis, channel: string): Promise<number> {
  const reply = (await redis.call('PUBSUB', 'NUMSUB', channel)) as [string, number];
  return Number(reply[1]);
}

/** Rows of the messages table (all chats). */
export async function messageRows(db: Db) {
  const { rows } = await db.query<{ id: number; chat_id: string; text: string }>('SELECT id, chat_id, text FROM messages ORDER BY id');
  return rows;
}
