// @ts-check
// Federated GraphQL through the gateway: a flat query, a nested one, and one that crosses
// subgraphs with entity fetches (the caller's orders → product from catalog, buyer from content).
//   k6 run -e PROFILE=load -e RATE=100 loadtest/k6/graphql.js
import http from 'k6/http';
import { check } from 'k6';
import { BASE_URL, baseThresholds, JSON_HEADERS, login, scenarioFor, summaryWriter } from './lib/common.js';

export const options = {
  scenarios: scenarioFor('queries', { rate: 100 }),
  thresholds: Object.assign(baseThresholds(300), {
    'checks{query:cross}': ['rate>0.99'],
  }),
};

const FLAT = '{ posts(first: 10) { edges { node { id title } } } }';
const NESTED = '{ users { id name posts { id title author { id name } } } }';
const CROSS = '{ me { id orders { id product { name price } user { name } } } }';

export function setup() {
  return { token: login() };
}

/**
 * @param {string} query
 * @param {Record<string, string>} headers
 * @param {string} tag
 */
function post(query, headers, tag) {
  return http.post(`${BASE_URL}/graphql`, JSON.stringify({ query }), {
    headers: Object.assign({}, JSON_HEADERS, headers),
    tags: { name: `graphql ${tag}`, query: tag },
  });
}

/** @param {{ token: string }} data */
export function queries(data) {
  const ok = (/** @type {import('k6/http').RefinedResponse<any>} */ r) =>
    r.status === 200 && !(/** @type {{ errors?: unknown }} */ (r.json()).errors);
  check(post(FLAT, {}, 'flat'), { 'flat: data, no errors': ok }, { query: 'flat' });
  check(post(NESTED, {}, 'nested'), { 'nested: data, no errors': ok }, { query: 'nested' });
  check(post(CROSS, { Authorization: `Bearer ${data.token}` }, 'cross'), { 'cross-subgraph: data, no errors': ok }, { query: 'cross' });
}

export const handleSummary = summaryWriter('graphql');
