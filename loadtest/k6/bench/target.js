// @ts-check
// One request, asked over and over: the load `npm run bench:k6` and `npm run bench:curves` drive
// through each gateway (loadtest/src/k6-driver.ts starts it; it is not a suite of its own).
//   closed model: -e VUS=20 -e DURATION=15s        (each VU one connection, one caller)
//   open model:   -e RATE=400 -e DURATION=15s      (constant arrival rate, requests per second)
// The request: -e URL=… -e METHOD=POST -e BODY='{"query":"…"}' and, for distinct callers,
// -e HEADERS_FILE=/path/headers.json: a JSON array of header objects, VU i sends entry (i-1) mod n.
import http from 'k6/http';
import { check } from 'k6';

const URL = __ENV.URL || 'http://127.0.0.1:4000/graphql';
const METHOD = __ENV.METHOD || 'GET';
const BODY = __ENV.BODY || null;
const GRAPHQL = __ENV.GRAPHQL === '1';
const DURATION = __ENV.DURATION || '15s';
/** A request unanswered this long counts as failed (k6's own default is 60 s). */
const TIMEOUT = __ENV.TIMEOUT || '10s';
/** @type {Record<string, string>[]} */
const PER_VU = __ENV.HEADERS_FILE ? JSON.parse(open(__ENV.HEADERS_FILE)) : [{}];
const BASE_HEADERS = BODY ? { 'content-type': 'application/json' } : {};

/** @returns {import('k6/options').Scenario} */
function scenario() {
  if (__ENV.RATE) {
    const rate = Number(__ENV.RATE);
    const vus = Number(__ENV.MAX_VUS || Math.max(50, Math.ceil(rate / 2)));
    return {
      executor: 'constant-arrival-rate',
      rate,
      timeUnit: '1s',
      duration: DURATION,
      preAllocatedVUs: vus,
      maxVUs: vus,
    };
  }
  return { executor: 'constant-vus', vus: Number(__ENV.VUS || 20), duration: DURATION };
}

export const options = {
  scenarios: { target: scenario() },
  // Nothing but the numbers the driver reads; no thresholds (the driver judges), no setup output.
  summaryTrendStats: ['med', 'p(95)', 'p(99)', 'max'],
  discardResponseBodies: !GRAPHQL,
  noConnectionReuse: false,
  userAgent: 'halo-bench-k6',
};

/** This VU's headers (module scope is per VU in k6): chosen on its first iteration, when __VU is set. */
/** @type {Record<string, string> | null} */
let headers = null;

export default function () {
  if (headers === null) headers = Object.assign({}, BASE_HEADERS, PER_VU[(__VU - 1) % PER_VU.length]);
  const res = http.request(METHOD, URL, BODY, { headers: headers, timeout: TIMEOUT, responseType: GRAPHQL ? 'text' : 'none' });
  if (GRAPHQL) {
    check(res, { 'data without errors': (r) => r.status === 200 && typeof r.body === 'string' && r.body.indexOf('"errors"') < 0 });
  } else {
    check(res, { 'status 200': (r) => r.status === 200 });
  }
}
