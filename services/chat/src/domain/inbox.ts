/**
 * One subscriber's messages not yet taken: an async iterator fed by the bus. Messages wait here
 * while the client is slow (graphql-ws awaits each send); past `limit` the subscription fails
 * instead of growing without bound — the client resubscribes and catches up with `messages`.
 */
export class Inbox<T> implements AsyncIterableIterator<T> {
  private readonly queued: T[] = [];
  private readonly takers: { resolve: (step: IteratorResult<T>) => void; reject: (err: unknown) => void }[] = [];
  private failure: unknown = null;
  private closed = false;

  constructor(
    /** Runs once, however the iterator ends (the bus unsubscribes here). */
    private readonly onEnd: () => void,
    private readonly limit: number,
    private readonly overflow: () => Error,
  ) {}

  push(value: T): void {
    if (this.closed) return;
    const taker = this.takers.shift();
    if (taker) return taker.resolve({ value, done: false });
    if (this.queued.length >= this.limit) return this.fail(this.overflow());
    this.queued.push(value);
  }

  next(): Promise<IteratorResult<T>> {
    if (this.queued.length > 0) return Promise.resolve({ value: this.queued.shift()!, done: false });
    if (this.failure !== null) {
      const err: unknown = this.failure;
      this.failure = null;
      return Promise.reject(err);
    }
    if (this.closed) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => this.takers.push({ resolve, reject }));
  }

  return(): Promise<IteratorResult<T>> {
    this.end();
    this.queued.length = 0;
    for (const taker of this.takers.splice(0)) taker.resolve({ value: undefined, done: true });
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }

  /** Ends the stream with `err`: queued messages are dropped, the next take rejects. */
  private fail(err: unknown): void {
    this.end();
    this.queued.length = 0;
    const taker = this.takers.shift();
    if (taker) taker.reject(err);
    else this.failure = err;
    for (const rest of this.takers.splice(0)) rest.resolve({ value: undefined, done: true });
  }

  private end(): void {
    if (this.closed) return;
    this.closed = true;
    this.onEnd();
  }
}
