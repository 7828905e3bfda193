// @ts-check
// Orders, naturally idempotent: each iteration creates an order with a fresh client_order_id
// (201) and sends it again (200, the same order). `duplicate_orders` must stay at 0.
//   k6 run -e PROFILE=load -e RATE=50 loadtest/k6/orders.js
import http from 'k6/http';
import { check } from 'k6';
import { Counter } from 'k6/metrics';
import { BASE_URL, baseThresholds, JSON_HEADERS, login, scenarioFor, summaryWriter } from './lib/common.js';
import { uuidv4 } from './lib/uuid.js';

const duplicates = new Counter('duplicate_orders');

export const options = {
  scenarios: scenarioFor('orderTwice', { rate: 50 }),
  thresholds: Object.assign(baseThresholds(300), {
    duplicate_orders: ['count==0'],
  }),
};

export function setup() {
  return { token: login() };
}

/** @param {{ token: string }} data */
export function orderTwice(data) {
  const params = { headers: Object.assign({ Authorization: `Bearer ${data.token}` }, JSON_HEADERS), tags: { name: 'POST /api/orders' } };
  const body = JSON.stringify({ product_id: 1 + Math.floor(Math.random() * 40), client_order_id: uuidv4() });
  const first = http.post(`${BASE_URL}/api/orders`, body, params);
  if (!check(first, { 'new order 201': (r) => r.status === 201 })) return;
  const again = http.post(`${BASE_URL}/api/orders`, body, params);
  const same =
    again.status === 200 &&
    /** @type {{ data: { id: number } }} */ (again.json()).data.id === /** @type {{ data: { id: number } }} */ (first.json()).data.id;
  if (!same) duplicates.add(1);
  check(again, { 'repeat 200 with the same order': () => same });
}

export const handleSummary = summaryWriter('orders');
