// @ts-check
// Login and protected calls: a login per iteration (argon2id makes this the expensive one, so its
// rate is low), then the caller's profile and a protected GraphQL field with that token.
//   k6 run -e PROFILE=load -e RATE=10 loadtest/k6/auth.js
import http from 'k6/http';
import { check } from 'k6';
import { BASE_URL, baseThresholds, JSON_HEADERS, login, scenarioFor, summaryWriter } from './lib/common.js';

export const options = {
  scenarios: scenarioFor('loginAndCall', { rate: 10 }),
  thresholds: Object.assign(baseThresholds(500), {
    'http_req_duration{endpoint:profile}': ['p(95)<100'],
  }),
};

export function loginAndCall() {
  const token = login();
  const auth = { Authorization: `Bearer ${token}` };
  check(http.get(`${BASE_URL}/profile`, { headers: auth, tags: { name: 'GET /profile', endpoint: 'profile' } }), {
    'profile 200': (r) => r.status === 200,
  });
  const me = http.post(`${BASE_URL}/graphql`, JSON.stringify({ query: '{ me { id name } }' }), {
    headers: Object.assign({}, JSON_HEADERS, auth),
    tags: { name: 'graphql me' },
  });
  check(me, {
    'me answered': (r) => {
      if (r.status !== 200) return false;
      const body = /** @type {{ data?: { me?: unknown } }} */ (r.json());
      return !!body.data && body.data.me != null;
    },
  });
  // Without a token the protected field is refused before execution.
  const anonymous = http.post(`${BASE_URL}/graphql`, JSON.stringify({ query: '{ me { id } }' }), {
    headers: JSON_HEADERS,
    tags: { name: 'graphql me anonymous' },
    responseCallback: http.expectedStatuses(200, 401),
  });
  check(anonymous, {
    'anonymous me refused': (r) => r.status === 401 || /** @type {{ errors?: unknown[] }} */ (r.json()).errors !== undefined,
  });
}

export const handleSummary = summaryWriter('auth');
