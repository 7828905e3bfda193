import { abortReason, SignedOutError } from './errors.js';

/**
 * The access token and its renewal (the spec's "Refresh token pattern"; docs/api/auth.md).
 *
 * Refresh is single flight: every request refused with 401 at the same time waits for ONE
 * `POST /auth/refresh`. That is not only thrift: auth rotates the refresh cookie on every refresh
 * and treats a second use of a rotated cookie as theft, revoking the whole session, so two
 * parallel refreshes would sign the user out.
 *
 * Each token carries a generation. A request remembers the generation it was sent with; a 401 for
 * an older generation means the token already changed since (another request refreshed it, or the
 * session ended), so the request is retried with the current token, or fails with
 * SignedOutError, without another refresh.
 */
export class Session {
  private token: string | null;
  private gen = 0;
  private inFlight: Promise<string> | null = null;

  constructor(
    initialToken: string | null,
    /** Performs `POST /auth/refresh`; rejects with SignedOutError when auth refuses. */
    private readonly refresher: () => Promise<string>,
    private readonly onChange?: (token: string | null) => void,
  ) {
    this.token = initialToken;
  }

  get accessToken(): string | null {
    return this.token;
  }

  /** Changes with every new token, and when the token is cleared. */
  get generation(): number {
    return this.gen;
  }

  set(token: string | null): void {
    if (token === this.token) return;
    this.token = token;
    this.gen++;
    this.onChange?.(token);
  }

  /**
   * A fresh token after a request sent with generation `sentWith` was refused with 401: the
   * current one if it changed since, else the result of the (shared) refresh.
   */
  async renewAfterUnauthorized(sentWith: number, signal?: AbortSignal): Promise<string> {
    if (sentWith !== this.gen) {
      if (this.token !== null) return this.token;
      throw new SignedOutError();
    }
    return this.refresh(signal);
  }

  /**
   * Renews the token now (single flight). The `signal` only stops this caller's wait; the shared
   * refresh itself runs to its end, because abandoning it after the server rotated the cookie
   * would lose the new one.
   */
  async refresh(signal?: AbortSignal): Promise<string> {
    this.inFlight ??= (async () => {
      try {
        const token = await this.refresher();
        this.set(token);
        return token;
      } catch (err) {
        if (err instanceof SignedOutError) this.set(null);
        throw err;
      } finally {
        this.inFlight = null;
      }
    })();
    if (!signal) return this.inFlight;
    return raceAbort(this.inFlight, signal);
  }
}

function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
