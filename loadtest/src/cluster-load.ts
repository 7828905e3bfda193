import type { Caller } from './callers';

/**
 * The mixed load of `npm run bench:cluster` (src/cluster-bench.ts), all through the front nginx:
 * GraphQL and REST reads by distinct callers, payments retried with their Idempotency-Key until
 * they succeed. Chat is src/cluster-chat.ts. Every request lands in a 5-second window, so the dip
 * around the kills shows.
 */
export const KINDS = ['graphql', 'rest', 'payment', 'chat-send'] as const;
export type Kind = (typeof KINDS)[number];

export const WINDOW_S = 5;
/** A request unanswered for this long fails (and a payment is tried again with its key). */
export const REQUEST_TIMEOUT_MS = 5_000;
export const ME_QUERY = '{ me { orders { id product { name price } user { name } } } }';
export const REST_PATH = '/posts/2';

export interface WindowCounts {
  /** Seconds since the load started, at the window's start. */
  fromS: number;
  ok: Record<Kind, number>;
  failed: Record<Kind, number>;
  /** All kinds: answered-ok latencies' p99, ms. */
  p99: number;
}

export interface KindTotals {
  kind: Kind;
  requests: number;
  failed: number;
  p50: number;
  p99: number;
}

const zero = (): Record<Kind, number> => ({ graphql: 0, rest: 0, payment: 0, 'chat-send': 0 });
export const pct = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
const sortNum = (v: number[]) => [...v].sort((a, b) => a - b);

/** Requests by kind, ok or failed, per 5-second window, and the latencies of the ok ones. */
export class Recorder {
  readonly startedAt = Date.now();
  private readonly windows: { ok: Record<Kind, number>; failed: Record<Kind, number>; latencies: number[] }[] = [];
  private readonly latencies: Record<Kind, number[]> = { graphql: [], rest: [], payment: [], 'chat-send': [] };
  /** Why failures failed (first few per kind), for the log. */
  readonly reasons = new Map<string, number>();

  seconds(at = Date.now()): number {
    return (at - this.startedAt) / 1000;
  }

  record(kind: Kind, ok: boolean, ms: number, why?: string): void {
    const i = Math.floor(this.seconds() / WINDOW_S);
    while (this.windows.length <= i) this.windows.push({ ok: zero(), failed: zero(), latencies: [] });
    const w = this.windows[i]!;
    if (ok) {
      w.ok[kind]++;
      w.latencies.push(ms);
      this.latencies[kind].push(ms);
    } else {
      w.failed[kind]++;
      const key = `${kind}: ${why ?? 'failed'}`;
      this.reasons.set(key, (this.reasons.get(key) ?? 0) + 1);
    }
  }

  windowRows(): WindowCounts[] {
    return this.windows.map((w, i) => ({ fromS: i * WINDOW_S, ok: w.ok, failed: w.failed, p99: pct(sortNum(w.latencies), 99) }));
  }

  totals(): KindTotals[] {
    return KINDS.map((kind) => {
      const sorted = sortNum(this.latencies[kind]);
      const failed = this.windows.reduce((a, w) => a + w.failed[kind], 0);
      return { kind, requests: sorted.length + failed, failed, p50: pct(sorted, 50), p99: pct(sorted, 99) };
    });
  }
}

/** One request with a deadline: the status and body, or the error's short reason. */
export async function call(
  url: string,
  init: RequestInit,
): Promise<{ status: number; body: string; headers: Headers; ms: number } | { error: string; ms: number }> {
  const t0 = performance.now();
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    const body = await res.text();
    return { status: res.status, body, headers: res.headers, ms: performance.now() - t0 };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    return { error: e.name === 'TimeoutError' ? 'timeout' : (e.cause?.code ?? e.message), ms: performance.now() - t0 };
  }
}

/** What makes a `me` answer right: data, no errors, the caller's 5 orders each with its product and user. */
function meIsRight(body: string): string | null {
  try {
    const r = JSON.parse(body) as {
      data?: { me?: { orders?: { product?: unknown; user?: unknown }[] } };
      errors?: { message?: string; extensions?: { code?: string } }[];
    };
    if (r.errors) return `errors: ${r.errors[0]?.extensions?.code ?? ''} ${r.errors[0]?.message?.slice(0, 80) ?? ''}`;
    const orders = r.data?.me?.orders;
    if (!orders || orders.length !== 5 || orders.some((o) => !o.product || !o.user)) return 'incomplete';
    return null;
  } catch {
    return 'not JSON';
  }
}

/** One reader: GraphQL `me` and REST `GET /posts/2` in turn, as `caller`, until `stopped()`. */
export async function readLoop(front: string, caller: Caller, rec: Recorder, stopped: () => boolean): Promise<void> {
  const authorization = `Bearer ${caller.token}`;
  const gql = JSON.stringify({ query: ME_QUERY });
  for (let n = 0; !stopped(); n++) {
    if (n % 2 === 0) {
      const r = await call(`${front}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization },
        body: gql,
      });
      const why = 'error' in r ? r.error : r.status !== 200 ? `HTTP ${r.status}` : meIsRight(r.body);
      rec.record('graphql', why === null, r.ms, why ?? undefined);
    } else {
      const r = await call(`${front}${REST_PATH}`, { headers: { authorization } });
      const why = 'error' in r ? r.error : r.status !== 200 ? `HTTP ${r.status}` : null;
      rec.record('rest', why === null, r.ms, why ?? undefined);
    }
  }
}

export interface PaymentOutcome {
  key: string;
  caller: Caller;
  attempts: number;
  /** The payment ids the 201 answers named (one, if the key charged once). */
  ids: Set<number>;
  succeeded: boolean;
  /** 201 answers with `Idempotent-Replayed: true`: an earlier attempt had charged. */
  replayed: number;
}

/**
 * One payment: `POST /api/payments` with its Idempotency-Key, tried again with the same key on any
 * failure or timeout (after Retry-After on a 409) until it answers 201 or `deadline` passes.
 */
export async function pay(front: string, key: string, caller: Caller, rec: Recorder, deadline: number): Promise<PaymentOutcome> {
  const out: PaymentOutcome = { key, caller, attempts: 0, ids: new Set(), succeeded: false, replayed: 0 };
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${caller.token}`, 'idempotency-key': key };
  while (!out.succeeded && Date.now() < deadline) {
    out.attempts++;
    const r = await call(`${front}/api/payments`, { method: 'POST', headers, body: JSON.stringify({ amount: 1.25 }) });
    if (!('error' in r) && r.status === 201) {
      out.succeeded = true;
      out.ids.add((JSON.parse(r.body) as { data: { id: number } }).data.id);
      if (r.headers.get('idempotent-replayed') === 'true') out.replayed++;
      rec.record('payment', true, r.ms);
      break;
    }
    rec.record('payment', false, r.ms, 'error' in r ? r.error : `HTTP ${r.status}`);
    const retryAfter = 'error' in r ? null : Number(r.headers.get('retry-after'));
    await new Promise((res) => setTimeout(res, retryAfter ? Math.min(retryAfter * 1000, 2_000) : 200));
  }
  return out;
}

/** One payer: payment after payment (a new key each, callers in turn) until `stopped()`; the last one is finished. */
export async function payLoop(
  front: string,
  run: string,
  payer: number,
  callers: readonly Caller[],
  rec: Recorder,
  stopped: () => boolean,
): Promise<PaymentOutcome[]> {
  const outcomes: PaymentOutcome[] = [];
  for (let n = 0; !stopped(); n++) {
    const caller = callers[(payer * 7 + n) % callers.length]!;
    // A key the run started finishes even after the load stops: 60 s more to succeed.
    outcomes.push(await pay(front, `cluster-${run}-${payer}-${n}`, caller, rec, Date.now() + 60_000));
  }
  return outcomes;
}
