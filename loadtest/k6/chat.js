// @ts-check
// Subscriptions: SUBSCRIBERS WebSocket clients hold newMessage(chatId) open through the gateway
// (graphql-transport-ws) while a sender posts sendMessage at a constant rate; each message carries
// its send time, so every subscriber measures publish → receive latency.
//   k6 run -e PROFILE=load -e SUBSCRIBERS=500 -e RATE=10 loadtest/k6/chat.js
// Uses k6/ws, present from k6 v0.48 through 1.x.
import http from 'k6/http';
import ws from 'k6/ws';
import { check } from 'k6';
import { Counter, Trend } from 'k6/metrics';
import { BASE_URL, JSON_HEADERS, login, PROFILE, summaryWriter } from './lib/common.js';

const SUBSCRIBERS = Number(__ENV.SUBSCRIBERS || (PROFILE === 'smoke' ? 5 : 100));
const RATE = Number(__ENV.RATE || (PROFILE === 'smoke' ? 2 : 10));
const DURATION = __ENV.DURATION || (PROFILE === 'smoke' ? '30s' : '2m');
const WS_URL = `${BASE_URL.replace(/^http/, 'ws')}/graphql`;
/** The sender starts this late, so that the subscribers are connected first. */
const SENDER_START_MS = 5000;
/** Subscribers listen until the sender has stopped and its last messages had this long to arrive. */
const DRAIN_MS = 2000;
const HOLD_MS = SENDER_START_MS + durationMs(DURATION) + DRAIN_MS;

const latency = new Trend('fanout_latency', true);
const received = new Counter('events_received');
const sent = new Counter('messages_sent');
const refused = new Counter('subscription_errors');

export const options = {
  scenarios: {
    subscribers: {
      executor: 'per-vu-iterations',
      exec: 'subscriber',
      vus: SUBSCRIBERS,
      iterations: 1,
      maxDuration: `${Math.ceil(HOLD_MS / 1000) + 10}s`,
    },
    sender: Object.assign(
      {
        executor: PROFILE === 'stress' ? 'ramping-arrival-rate' : 'constant-arrival-rate',
        exec: 'sender',
        startTime: `${SENDER_START_MS / 1000}s`,
        timeUnit: '1s',
        preAllocatedVUs: 5,
        maxVUs: 50,
      },
      PROFILE === 'stress' ? { startRate: RATE, stages: [{ target: RATE * 5, duration: DURATION }] } : { rate: RATE, duration: DURATION },
    ),
  },
  thresholds: {
    fanout_latency: [`p(95)<${PROFILE === 'stress' ? 200 : 50}`],
    subscription_errors: ['count==0'],
    events_received: ['count>0'],
    'checks{step:send}': ['rate>0.99'],
  },
};

/**
 * One chat per run, so runs never hear each other. Chosen here, not in the init context: that runs
 * once per VU, so each VU would pick its own chat; setup() runs once and every VU receives its result.
 * @returns {{ token: string, chatId: string }}
 */
export function setup() {
  return { token: login(), chatId: __ENV.CHAT_ID || `k6-${Date.now()}` };
}

/** @param {{ token: string, chatId: string }} data */
export function subscriber(data) {
  const res = ws.connect(WS_URL, { headers: { 'Sec-WebSocket-Protocol': 'graphql-transport-ws' } }, (socket) => {
    socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${data.token}` } })));
    socket.on('message', (raw) => {
      const msg = JSON.parse(raw);
      if (msg.type === 'connection_ack') {
        socket.send(
          JSON.stringify({
            id: '1',
            type: 'subscribe',
            payload: {
              query: 'subscription($c: ID!) { newMessage(chatId: $c) { id text author { name } } }',
              variables: { c: data.chatId },
            },
          }),
        );
      } else if (msg.type === 'next') {
        const message = msg.payload && msg.payload.data && msg.payload.data.newMessage;
        const text = (message && message.text) || '';
        if (text.startsWith('t:')) {
          latency.add(Date.now() - Number(text.slice(2)));
          received.add(1);
        }
      } else if (msg.type === 'error') {
        refused.add(1);
      } else if (msg.type === 'ping') {
        socket.send(JSON.stringify({ type: 'pong' }));
      }
    });
    socket.on('close', (code) => {
      if (code !== 1000) refused.add(1);
    });
    socket.setTimeout(() => {
      socket.send(JSON.stringify({ id: '1', type: 'complete' }));
      socket.close(1000);
    }, HOLD_MS);
  });
  check(res, { 'websocket upgraded (101)': (r) => r && r.status === 101 });
}

/** @param {{ token: string, chatId: string }} data */
export function sender(data) {
  const res = http.post(
    `${BASE_URL}/graphql`,
    JSON.stringify({
      query: 'mutation($c: ID!, $t: String!) { sendMessage(chatId: $c, text: $t) { id } }',
      variables: { c: data.chatId, t: `t:${Date.now()}` },
    }),
    { headers: Object.assign({ Authorization: `Bearer ${data.token}` }, JSON_HEADERS), tags: { name: 'sendMessage' } },
  );
  const ok = check(res, { 'sendMessage: no errors': (r) => r.status === 200 && !(/** @type {any} */ (r.json()).errors) }, { step: 'send' });
  if (ok) sent.add(1);
}

/** @param {string} d e.g. `30s`, `2m` */
function durationMs(d) {
  const m = /^(\d+)(ms|s|m|h)$/.exec(d);
  if (!m) return 60000;
  return Number(m[1]) * { ms: 1, s: 1000, m: 60000, h: 3600000 }[/** @type {'ms'|'s'|'m'|'h'} */ (m[2])];
}

export const handleSummary = summaryWriter('chat');
