/**
 * The page script of e2e/browser.test.ts: bundled for the browser with esbuild and served from a
 * web app's origin, it calls Halo through `@halo/client` as a web app would. The test drives it
 * through `globalThis.haloPage`, whose methods answer plain data (errors as `{ name, message }`).
 */
import { createHaloClient, type HaloClient } from '@halo/client';
import { sseTransport } from '@halo/client/sse';

export interface Failure {
  name: string;
  message: string;
}

export interface Listener {
  texts: string[];
  errors: Failure[];
  connected: boolean;
}

const failure = (err: unknown): Failure =>
  err instanceof Error ? { name: err.name || err.constructor.name, message: err.message } : { name: 'unknown', message: String(err) };

let gateway = '';
let client: HaloClient | undefined;
const clients: HaloClient[] = [];
const listeners: Listener[] = [];

function current(): HaloClient {
  if (!client) throw new Error('call start() first');
  return client;
}

function make(opts: Parameters<typeof createHaloClient>[0] = {}): HaloClient {
  // No retries: a refusal must surface at once, not after the contract's backoff.
  const made = createHaloClient({ baseUrl: gateway, retry: { retries: 0 }, ...opts });
  clients.push(made);
  return made;
}

const NEW_MESSAGE = 'subscription($c: ID!) { newMessage(chatId: $c) { id text author { name } } }';
const SEND = 'mutation($c: ID!, $t: String!) { sendMessage(chatId: $c, text: $t) { id } }';

const api = {
  /** A client for the gateway at `baseUrl` (this page's origin differs). */
  start(baseUrl: string): void {
    gateway = baseUrl;
    client = make();
  },
  async login(email: string, password: string): Promise<string> {
    await current().auth.login({ email, password });
    return (await current().auth.profile()).email;
  },
  /** Resumes the session from the browser's httpOnly refresh cookie (a fresh client, no token). */
  async resume(): Promise<string> {
    await current().auth.refresh();
    return (await current().auth.profile()).email;
  },
  async products(): Promise<number> {
    return (await current().products.list({ limit: 2 })).data.length;
  },
  async me(): Promise<string> {
    const data = await current().graphql.query<{ me: { name: string } }>('{ me { name } }');
    return data.me.name;
  },
  async send(chatId: string, text: string): Promise<void> {
    await current().graphql.mutate(SEND, { c: chatId, t: text });
  },
  /** Subscribes to chat `chatId` over `transport` with a client sharing the access token; its index. */
  listen(transport: 'websocket' | 'sse', chatId: string, reconnectAttempts = 10): number {
    const listener: Listener = { texts: [], errors: [], connected: false };
    const sub = make({
      accessToken: current().accessToken,
      subscriptions: {
        transport: transport === 'sse' ? sseTransport : transport,
        reconnect: { attempts: reconnectAttempts },
        onConnected: () => void (listener.connected = true),
      },
    });
    sub.graphql.subscribe<{ newMessage: { text: string } }>(
      NEW_MESSAGE,
      { c: chatId },
      {
        next: (r) => void (r.data && listener.texts.push(r.data.newMessage.text)),
        error: (e) => void listener.errors.push(failure(e)),
      },
    );
    return listeners.push(listener) - 1;
  },
  listener(i: number): Listener {
    const listener = listeners[i];
    if (!listener) throw new Error(`no listener ${i}`);
    return listener;
  },
  /** A plain `fetch` of a gateway path (no SDK): its status, or how it failed. */
  async fetchStatus(path: string): Promise<number | Failure> {
    try {
      return (await fetch(gateway + path)).status;
    } catch (err) {
      return failure(err);
    }
  },
  /** Runs a call and answers how it failed, or null when it did not. */
  async failureOf(call: 'login' | 'products', email = '', password = ''): Promise<Failure | null> {
    try {
      await (call === 'login' ? current().auth.login({ email, password }) : current().products.list());
      return null;
    } catch (err) {
      return failure(err);
    }
  },
  async close(): Promise<void> {
    await Promise.all(clients.map((c) => c.close()));
  },
};

export type HaloPage = typeof api;

declare global {
  var haloPage: HaloPage;
}
globalThis.haloPage = api;
