import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { bearer, gql, metricValue, startE2ESystem } from '../helpers';

/**
 * Chat down, hanging or restarting while clients subscribe and leave: the gateway stays up. A
 * client leaving while the gateway's own connection to chat is still being opened makes
 * graphql-ws's `dispose()` wait for that attempt and reject when chat then refuses it; that
 * rejection, left unhandled, used to end the gateway (every client's socket dropped) — a chat
 * outage became a whole-API outage. Each phase checks that the gateway process is the one that
 * started (never restarted), still answers, and counted no unhandled rejection.
 */
const CLIENTS = 100;
/** chat's restart delay after it is killed: long enough for the "chat down" phase. */
const CHAT_DOWN_MS = 4_000;

let sys: Awaited<ReturnType<typeof startE2ESystem>>;
const alice = bearer('2', 'Alice', 'user');
const NEW = 'subscription($c: ID!) { newMessage(chatId: $c) { id text author { name } } }';
const RESUME = 'subscription($c: ID!, $a: ID) { newMessage(chatId: $c, after: $a) { id text } }';

beforeAll(async () => {
  sys = await startE2ESystem({ postgres: true, restart: { initialDelayMs: CHAT_DOWN_MS } });
}, 120_000);

afterAll(async () => {
  for (const p of sys?.system.processes ?? []) p.child.kill('SIGCONT');
  await sys?.stop();
}, 60_000);

const proc = (name: string) => sys.system.processes.find((p) => p.name === name && !p.replica)!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function client(): Client {
  return createClient({
    url: `${sys.url.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: alice,
    retryAttempts: 0,
    shouldRetry: () => false,
  });
}

/**
 * `CLIENTS` clients, each on its own socket, subscribe — half to one public chat (one shared
 * upstream at the gateway), half resuming (each its own upstream socket) — and resolve once the
 * gateway acknowledged each socket and took its subscription.
 */
async function subscribeMany(room: string): Promise<{ clients: Client[]; errors: unknown[] }> {
  const errors: unknown[] = [];
  const clients = await Promise.all(
    Array.from({ length: CLIENTS }, async (_, i) => {
      const c = client();
      const connected = new Promise<void>((resolve, reject) => {
        c.on('connected', () => resolve());
        c.on('closed', (e) => reject(new Error(`the gateway closed socket ${i}: ${(e as { code?: number }).code}`)));
      });
      const [query, variables] = i % 2 === 0 ? [NEW, { c: room }] : [RESUME, { c: room, a: '0' }];
      c.subscribe({ query, variables }, { next: () => undefined, error: (e) => void errors.push(e), complete: () => undefined });
      await connected;
      return c;
    }),
  );
  return { clients, errors };
}

/** The gateway never restarted, answers, and left no rejection unhandled. */
async function expectGatewayUnharmed(startedPid: number | undefined) {
  const gateway = proc('gateway');
  expect(gateway.restarts).toBe(0);
  expect(gateway.child.pid).toBe(startedPid);
  expect(gateway.child.exitCode).toBeNull();
  expect((await fetch(`${sys.url}/hello`)).status).toBe(200);
  expect(await metricValue(sys.gatewayMetricsUrl, 'halo_unhandled_rejections_total')).toBe(0);
}

it('clients leaving while the connection to a hanging chat is pending, then refused, do not end the gateway', async () => {
  const gatewayPid = proc('gateway').child.pid;
  const chat = proc('chat');
  // Hanging: its socket accepts (the kernel's backlog) but nothing answers the WebSocket upgrade.
  chat.child.kill('SIGSTOP');
  const { clients } = await subscribeMany(`outage-${Date.now()}`);
  // The gateway is opening its upstream sockets now; the clients leave before any opened.
  await sleep(300);
  await Promise.all(clients.map(async (c) => c.dispose()));
  await sleep(300);
  // Every pending attempt is now refused at once (the kernel resets them).
  chat.child.kill('SIGKILL');
  await sleep(1_000);
  await expectGatewayUnharmed(gatewayPid);
}, 60_000);

it('clients subscribing and leaving while chat is down do not end the gateway, and chat serves them again once back', async () => {
  const gatewayPid = proc('gateway').child.pid;
  const chat = proc('chat');
  // Still down from the test before (restarted after CHAT_DOWN_MS), or killed here.
  if (chat.child.exitCode === null && chat.child.signalCode === null) chat.child.kill('SIGKILL');
  for (let round = 0; round < 3; round++) {
    const { clients } = await subscribeMany(`down-${round}-${Date.now()}`);
    await Promise.all(clients.map(async (c) => c.dispose()));
  }
  await sleep(500);
  await expectGatewayUnharmed(gatewayPid);

  // Once chat is back, the same gateway serves subscriptions again.
  const room = `back-${Date.now()}`;
  const deadline = Date.now() + 30_000;
  let heard = false;
  while (!heard && Date.now() < deadline) {
    const c = client();
    const texts: string[] = [];
    c.subscribe(
      { query: NEW, variables: { c: room } },
      {
        next: (v) => void texts.push((v.data as { newMessage: { text: string } }).newMessage.text),
        error: () => undefined,
        complete: () => undefined,
      },
    );
    await sleep(300);
    const sent = await gql(sys.url, 'mutation($c: ID!) { sendMessage(chatId: $c, text: "back") { id } }', { c: room }, alice);
    if (sent.status === 200 && !sent.body.errors) {
      const until = Date.now() + 2_000;
      while (!texts.includes('back') && Date.now() < until) await sleep(25);
      heard = texts.includes('back');
    }
    await c.dispose();
    if (!heard) await sleep(500);
  }
  expect(heard).toBe(true);
  await expectGatewayUnharmed(gatewayPid);
}, 90_000);
