import { randomUUID } from 'node:crypto';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { signAccessToken } from '@halo/kit/auth';

/** Traffic for the container test (./containers.test.ts): calls, users, steady load, open subscriptions. */

/** One HTTP call; the body parsed as JSON when it is JSON. */
export async function callHalo(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  let json: any; // any: answers asserted per test
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, headers: res.headers, body: json };
}

/** A new user registered and logged in: its token, its refresh cookie (`name=value`), its id. */
export async function registerUser(base: string, name: string): Promise<{ token: string; cookie: string; id: number }> {
  const email = `${name.toLowerCase()}-${randomUUID().slice(0, 8)}@example.com`;
  const created = await callHalo(base, 'POST', '/auth/register', { name, email, password: 'containers-password' });
  if (created.status !== 201) throw new Error(`register: ${created.status} ${JSON.stringify(created.body)}`);
  const res = await fetch(`${base}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: 'containers-password' }),
  });
  if (res.status !== 200) throw new Error(`login: ${res.status} ${await res.text()}`);
  const body = (await res.json()) as { token: string; user: { id: number } };
  const cookie = res.headers
    .getSetCookie()
    .find((c) => c.startsWith('refresh_token='))!
    .split(';')[0]!;
  return { token: body.token, cookie, id: body.user.id };
}

/**
 * Load comes from many users, one after the other (a token each, signed with the run's secret as
 * auth would sign it): one user's rate limit (1,200 requests a minute) is not what is measured.
 */
const callerTokens: string[] = [];
let callerIndex = 0;
export function loadCaller(jwtSecret: string): string {
  if (callerTokens.length === 0) {
    for (let i = 0; i < 20; i++)
      callerTokens.push(signAccessToken({ sub: String(10_000 + i), name: `Load ${i}`, role: 'user' }, jwtSecret, 3600));
  }
  return callerTokens[callerIndex++ % callerTokens.length]!;
}

export interface LoadStats {
  ok: number;
  failed: string[];
  /** From the first failure to the first success after it (0 without failures). */
  awayMs: number;
}

/** `rate` requests a second, each on its own (a slow answer does not slow the next), until stopped. */
export function steadyLoad(rate: number, request: () => Promise<string | null>) {
  const stats: LoadStats = { ok: 0, failed: [], awayMs: 0 };
  let firstFailure = 0;
  const inFlight = new Set<Promise<void>>();
  const timer = setInterval(() => {
    const p = request()
      .catch((err: unknown) => `error ${(err as Error).message}`)
      .then((failure) => {
        if (failure === null) {
          stats.ok++;
          if (firstFailure && !stats.awayMs) stats.awayMs = Date.now() - firstFailure;
        } else {
          stats.failed.push(failure);
          firstFailure ||= Date.now();
        }
      })
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  }, 1000 / rate);
  return {
    async stop(): Promise<LoadStats> {
      clearInterval(timer);
      await Promise.all(inFlight);
      return stats;
    },
  };
}

/** `n` clients, each on its own WebSocket, subscribed to one chat: half sharing one upstream, half resuming (their own). */
export async function openSubscriptions(url: string, token: string, n: number, send: (room: string, text: string) => Promise<string>) {
  const room = `release-${Date.now()}`;
  // The resuming half subscribes after a message that exists (an unknown id is refused).
  const first = await send(room, 'first');
  const ended: string[] = [];
  const heard: string[][] = [];
  const clients: Client[] = [];
  for (let i = 0; i < n; i++) {
    const texts: string[] = [];
    heard.push(texts);
    const client = createClient({
      url: `${url.replace(/^http/, 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${token}` },
      retryAttempts: 0,
    });
    clients.push(client);
    const [query, variables] =
      i % 2 === 0
        ? ['subscription($c: ID!) { newMessage(chatId: $c) { text } }', { c: room }]
        : ['subscription($c: ID!, $a: ID) { newMessage(chatId: $c, after: $a) { text } }', { c: room, a: first }];
    client.subscribe(
      { query, variables },
      {
        next: (v: any) => void texts.push(v.data?.newMessage?.text),
        error: (e: unknown) => void ended.push(`${i}: error ${JSON.stringify(e).slice(0, 200)}`),
        complete: () => void ended.push(`${i}: complete`),
      },
    );
  }
  // Every subscription live before the release starts.
  await until('every subscription live', async () => {
    await send(room, `probe-${Date.now()}`);
    await sleep(300);
    return heard.every((t) => t.length > 0);
  }).catch((err: Error) => {
    const live = heard.filter((t) => t.length > 0).length;
    throw new Error(`${err.message}: ${live} of ${n} live; ended: ${ended.slice(0, 3).join('; ') || 'none'}`);
  });
  return {
    ended: () => [...ended],
    /** Sends one more message; how many of the subscribers hear it. */
    async deliverAll(): Promise<number> {
      const text = `after-${Date.now()}`;
      await send(room, text);
      await until(
        'the message after the release',
        async () => {
          await sleep(200);
          return heard.every((t) => t.includes(text));
        },
        10_000,
      ).catch(() => undefined);
      return heard.filter((t) => t.includes(text)).length;
    },
    close: () => Promise.all(clients.map(async (c) => c.dispose())),
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function until(what: string, ok: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}
