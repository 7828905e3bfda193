// @ts-check
// REST reads through the gateway: the public routes a browsing client hits most.
//   k6 run -e PROFILE=load -e RATE=200 loadtest/k6/rest-reads.js
import http from 'k6/http';
import { check } from 'k6';
import { BASE_URL, baseThresholds, scenarioFor, summaryWriter } from './lib/common.js';

export const options = {
  scenarios: scenarioFor('reads', { rate: 200 }),
  thresholds: baseThresholds(200),
};

export function reads() {
  const page = 1 + Math.floor(Math.random() * 5);
  const responses = http.batch([
    ['GET', `${BASE_URL}/hello`, null, { tags: { name: 'GET /hello' } }],
    ['GET', `${BASE_URL}/products?page=${page}&limit=5`, null, { tags: { name: 'GET /products' } }],
    ['GET', `${BASE_URL}/posts/2`, null, { tags: { name: 'GET /posts/:id' } }],
  ]);
  check(responses[0], { 'hello 200': (r) => r.status === 200 });
  check(responses[1], {
    'products 200': (r) => r.status === 200,
    'products page of 5': (r) => /** @type {{ data: unknown[] }} */ (r.json()).data.length <= 5,
  });
  check(responses[2], { 'post 200': (r) => r.status === 200 });
}

export const handleSummary = summaryWriter('rest-reads');
