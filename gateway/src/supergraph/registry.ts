import { SERVICE_TOKEN_METADATA, type ServiceIdentity } from '@halo/kit/auth';
import { GATEWAY_ID_HEADER } from '@halo/kit/contract';
import type { Logger } from '@halo/kit/logging';

/** The registry's audience in the gateway's service token (docs/registry.md). */
export const REGISTRY_AUDIENCE = 'registry';
/** A poll that takes longer than this counts as the registry being away. */
const POLL_TIMEOUT_MS = 5_000;
/** The first retry while the registry has never answered, and the most it doubles to. */
const FIRST_ANSWER_RETRY_MS = 100;
const FIRST_ANSWER_RETRY_MAX_MS = 500;

export interface RegistryStatus {
  /** The last poll got an answer the gateway could use (200, 304, 404). */
  up: boolean;
  /** Since when `up` has had its value (ms since the epoch). */
  since: number;
  /** Why the registry counts as away (the last failure), when it does. */
  reason?: string;
  /** It has answered at least once since this gateway started (what the files served until then is known stale or not). */
  reached: boolean;
}

/** Where the registry is and who polls it: the same for every feed a gateway polls. */
export interface RegistryConnection {
  /** The registry's HTTP base, no trailing slash. */
  url: string;
  pollMs: number;
  identity: ServiceIdentity;
  gatewayId: string;
}

export interface RegistryPollerOptions<T> extends RegistryConnection {
  logger: Logger;
  /** The feed's path (`/v1/supergraph`, `/v1/operations/active`). */
  path: string;
  /** What the feed holds, for the logs ("composition", "operation lists"). */
  what: string;
  /** Reads a 200's JSON; throws when it is not an answer the gateway can use. */
  parse(json: unknown): T;
  /** The ETag to send next when the answer had none. */
  etagOf?(value: T): string;
  /** Validates and swaps the new value in; throws to refuse it (nothing changes then). */
  apply(value: T): void;
  /** What the refused value was, for the log line. */
  describe?(value: T): Record<string, unknown>;
}

export interface RegistryPoller {
  status(): RegistryStatus;
  /** One poll now (tests; the loop polls by itself). */
  pollNow(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Conditional polling of one of the registry's feeds (`GET /v1/supergraph`, `GET
 * /v1/operations/active`) with ETag / If-None-Match, one poll at a time, the first at once so a
 * gateway booted from older files catches up within one round trip. The registry being away
 * changes nothing served: the last good value stays, and `status()` says since when it is away.
 * A value that is refused is remembered by its ETag, so it is neither downloaded nor checked
 * again until the registry has a newer one.
 */
export function startRegistryPoller<T>(opts: RegistryPollerOptions<T>): RegistryPoller {
  const log = opts.logger.child({ component: 'registry', feed: opts.path });
  let etag: string | undefined;
  let state: RegistryStatus = { up: false, since: Date.now(), reason: 'not polled yet', reached: false };
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> = Promise.resolve();

  let warned = false;
  const mark = (up: boolean, reason?: string) => {
    if (up) {
      if (!state.up) log.info('registry reachable');
      if (!state.up) state = { up: true, since: Date.now(), reached: true };
      warned = false;
      return;
    }
    // Away since the last answer (or since start-up, if it never answered).
    state = { up: false, since: state.up ? Date.now() : state.since, reached: state.reached, ...(reason ? { reason } : {}) };
    // Logged on the change only: a registry away for an hour is one line, not 1,800.
    if (!warned) log.warn({ reason }, `registry unreachable; serving the last good ${opts.what}`);
    warned = true;
  };

  const poll = async (): Promise<void> => {
    let res: Response;
    try {
      const headers: Record<string, string> = { [GATEWAY_ID_HEADER]: opts.gatewayId };
      if (opts.identity.canCall) headers[SERVICE_TOKEN_METADATA] = await opts.identity.tokenFor(REGISTRY_AUDIENCE);
      if (etag) headers['if-none-match'] = etag;
      res = await fetch(`${opts.url}${opts.path}`, { headers, signal: AbortSignal.timeout(POLL_TIMEOUT_MS) });
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code;
      return mark(false, cause ?? (err as Error).message);
    }
    if (res.status === 304) return mark(true);
    if (res.status === 404) {
      await res.body?.cancel();
      return mark(true);
    }
    if (res.status !== 200) {
      const text = await res.text().catch(() => '');
      return mark(false, `HTTP ${res.status} ${text.slice(0, 200)}`.trim());
    }
    let value: T;
    try {
      value = opts.parse(await res.json());
    } catch (err) {
      return mark(false, `unreadable answer: ${(err as Error).message}`);
    }
    mark(true);
    etag = res.headers.get('etag') ?? opts.etagOf?.(value);
    try {
      opts.apply(value);
    } catch (err) {
      log.error({ ...opts.describe?.(value), message: (err as Error).message }, `${opts.what} refused; keeping the previous one`);
    }
  };

  // Until the registry first answers (a gateway booting beside it, or before it), polls come
  // sooner: from 100 ms, doubling up to 500 ms (or pollMs if shorter), so that the gateway is
  // ready soon after the registry is. A failed poll is one refused connection or one 5xx.
  let firstAnswerWait = Math.min(FIRST_ANSWER_RETRY_MS, opts.pollMs);
  const loop = async () => {
    if (stopped) return;
    inFlight = poll().catch((err: unknown) => log.error({ err }, 'registry poll failed'));
    await inFlight;
    let wait = opts.pollMs;
    if (!state.reached) {
      wait = firstAnswerWait;
      firstAnswerWait = Math.min(firstAnswerWait * 2, FIRST_ANSWER_RETRY_MAX_MS, opts.pollMs);
    }
    if (!stopped) timer = setTimeout(() => void loop(), wait).unref();
  };
  void loop();

  return {
    status: () => state,
    async pollNow() {
      await inFlight;
      await poll();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await inFlight;
    },
  };
}
