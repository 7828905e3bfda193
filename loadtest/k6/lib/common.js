// @ts-check
// Shared by every Halo k6 suite: where Halo is, the three load profiles, and the summary file.
// Runs on k6 v0.48 and later (ES2017 modules, no remote imports, no TypeScript at run time: checked by
// loadtest/test/k6-syntax.test.ts); type-checked against @types/k6 by `npm run typecheck:k6`.
import http from 'k6/http';
import { check, fail } from 'k6';

/** The gateway: `npm start` by default, or a Helm install's ingress (`-e BASE_URL=https://…`). */
export const BASE_URL = (__ENV.BASE_URL || 'http://127.0.0.1:4000').replace(/\/+$/, '');

/** smoke (1 VU, 30 s, a correctness check), load (constant arrival rate), stress (ramping arrival rate). */
export const PROFILE = __ENV.PROFILE || 'smoke';

const RATE = Number(__ENV.RATE || 50);
const DURATION = __ENV.DURATION || '2m';

/**
 * The `scenarios` entry for the chosen profile, running `exec`.
 * @param {string} exec the exported function to run
 * @param {{ rate?: number }} [opts] a per-suite base rate (requests per second) for load and stress
 * @returns {Record<string, import('k6/options').Scenario>}
 */
export function scenarioFor(exec, opts = {}) {
  const rate = opts.rate === undefined ? RATE : opts.rate;
  if (PROFILE === 'smoke') {
    return { [exec]: { executor: 'constant-vus', exec, vus: 1, duration: __ENV.DURATION || '30s' } };
  }
  if (PROFILE === 'load') {
    return {
      [exec]: {
        executor: 'constant-arrival-rate',
        exec,
        rate,
        timeUnit: '1s',
        duration: DURATION,
        preAllocatedVUs: Math.max(10, rate),
        maxVUs: rate * 4,
      },
    };
  }
  if (PROFILE === 'stress') {
    return {
      [exec]: {
        executor: 'ramping-arrival-rate',
        exec,
        startRate: Math.max(1, Math.floor(rate / 2)),
        timeUnit: '1s',
        preAllocatedVUs: rate * 2,
        maxVUs: rate * 10,
        stages: [
          { target: rate, duration: '1m' },
          { target: rate * 2, duration: '2m' },
          { target: rate * 4, duration: '2m' },
          { target: 0, duration: '30s' },
        ],
      },
    };
  }
  throw new Error(`PROFILE must be smoke, load or stress, not ${PROFILE}`);
}

/**
 * The pass/fail line every suite shares: few failed requests, and latency under the profile's bound.
 * @param {number} p95Ms
 * @returns {Record<string, string[]>}
 */
export function baseThresholds(p95Ms) {
  return {
    http_req_failed: [PROFILE === 'stress' ? 'rate<0.05' : 'rate<0.01'],
    http_req_duration: [`p(95)<${PROFILE === 'stress' ? p95Ms * 4 : p95Ms}`],
    checks: ['rate>0.99'],
  };
}

/** JSON headers. */
export const JSON_HEADERS = { 'Content-Type': 'application/json' };

/**
 * Logs a seeded demo user in (the embedded mode's demo data, docs/api/auth.md) and returns the
 * access token; against a real install pass EMAIL and PASSWORD of a test account.
 * @param {string} [email]
 * @param {string} [password]
 * @returns {string}
 */
export function login(email = __ENV.EMAIL || 'alice@halo.local', password = __ENV.PASSWORD || 'password123') {
  const res = http.post(`${BASE_URL}/auth/login`, JSON.stringify({ email, password }), {
    headers: JSON_HEADERS,
    tags: { name: 'POST /auth/login' },
  });
  const ok = check(res, { 'login 200': (r) => r.status === 200 });
  const token = ok ? /** @type {{ accessToken?: string }} */ (res.json()).accessToken : undefined;
  if (!token) fail(`login as ${email} failed: ${res.status} ${res.body}`);
  return /** @type {string} */ (token);
}

/**
 * `handleSummary` for every suite: a one-line verdict on stdout, and the summary as JSON in
 * `SUMMARY_DIR/k6-<suite>-<profile>.json` when SUMMARY_DIR is given. k6 creates no directory: it
 * must exist (relative to where k6 runs). Without SUMMARY_DIR no file is written, so a run from
 * any directory ends without a summary error.
 * @param {string} suite
 */
export function summaryWriter(suite) {
  /** @param {any} data */
  return (data) => {
    const failed = Object.entries(data.metrics || {})
      .filter(([, m]) => m && m.thresholds && Object.values(m.thresholds).some((t) => t && t.ok === false))
      .map(([name]) => name);
    /** @type {Record<string, string>} */
    const out = {
      stdout: `${suite} (${PROFILE}): ${failed.length ? `thresholds FAILED: ${failed.join(', ')}` : 'all thresholds passed'}\n`,
    };
    const dir = (__ENV.SUMMARY_DIR || '').replace(/\/+$/, '');
    if (dir) out[`${dir}/k6-${suite}-${PROFILE}.json`] = JSON.stringify(data, null, 2);
    return out;
  };
}
