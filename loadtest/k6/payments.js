// @ts-check
// Payments retried with the same Idempotency-Key, as a client following the retry guidance does
// after a timeout: every logical payment is sent twice (sometimes three times) with one key. The
// threshold that matters: `double_charges` stays at 0 — every repeat answers the first payment
// (same id, Idempotent-Replayed: true) or 409 while it is still running, never a new one.
//   k6 run -e PROFILE=load -e RATE=50 loadtest/k6/payments.js
import http from 'k6/http';
import { check } from 'k6';
import { Counter } from 'k6/metrics';
import { BASE_URL, baseThresholds, JSON_HEADERS, login, scenarioFor, summaryWriter } from './lib/common.js';
import { uuidv4 } from './lib/uuid.js';

const doubleCharges = new Counter('double_charges');
const replays = new Counter('replays');

export const options = {
  scenarios: scenarioFor('payAndRetry', { rate: 50 }),
  thresholds: Object.assign(baseThresholds(300), {
    double_charges: ['count==0'],
  }),
};

export function setup() {
  return { token: login() };
}

/** @param {{ token: string }} data */
export function payAndRetry(data) {
  const key = uuidv4();
  const params = {
    headers: Object.assign({ Authorization: `Bearer ${data.token}`, 'Idempotency-Key': key }, JSON_HEADERS),
    tags: { name: 'POST /api/payments' },
    // 409 (the first is still running) is an expected answer to a retry, not a failure.
    responseCallback: http.expectedStatuses(200, 201, 409),
  };
  const body = JSON.stringify({ amount: Number((1 + Math.random() * 99).toFixed(2)) });
  const first = http.post(`${BASE_URL}/api/payments`, body, params);
  if (!check(first, { 'first attempt 201': (r) => r.status === 201 })) return;
  const firstId = /** @type {{ data: { id: number } }} */ (first.json()).data.id;
  const attempts = Math.random() < 0.2 ? 2 : 1;
  for (let i = 0; i < attempts; i++) {
    const retry = http.post(`${BASE_URL}/api/payments`, body, params);
    if (retry.status === 409) continue;
    const same = retry.status === 201 && /** @type {{ data: { id: number } }} */ (retry.json()).data.id === firstId;
    if (!same) doubleCharges.add(1);
    if (retry.headers['Idempotent-Replayed'] === 'true') replays.add(1);
    check(retry, {
      'retry answers the first payment': () => same,
      'retry marked Idempotent-Replayed': (r) => r.headers['Idempotent-Replayed'] === 'true',
    });
  }
}

export const handleSummary = summaryWriter('payments');
