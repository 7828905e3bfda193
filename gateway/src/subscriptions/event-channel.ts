/**
 * A push-based async generator: a producer pushes values, ends or fails it; a consumer iterates.
 * Unlike an `async function*`, `return()` takes effect at once even while the consumer waits for
 * a value (graphql-ws calls it when the client unsubscribes or disconnects), and runs `onClose`
 * exactly once, whoever ends the channel — so nothing upstream is left subscribed.
 */
export class EventChannel<T> implements AsyncGenerator<T, undefined, undefined> {
  private readonly queue: T[] = [];
  private readonly waiting: { resolve(r: IteratorResult<T, undefined>): void; reject(err: unknown): void }[] = [];
  private failure: { error: unknown } | null = null;
  private done = false;

  constructor(private readonly onClose: () => void) {}

  get closed(): boolean {
    return this.done;
  }

  push(value: T): void {
    if (this.done) return;
    const next = this.waiting.shift();
    if (next) next.resolve({ value, done: false });
    else this.queue.push(value);
  }

  /** No more values: the consumer gets what is queued, then the end. */
  end(): void {
    if (this.done) return;
    this.close();
    for (const w of this.waiting.splice(0)) w.resolve({ value: undefined, done: true });
  }

  /** The consumer gets what is queued, then `error`. */
  fail(error: unknown): void {
    if (this.done) return;
    this.close();
    const waiters = this.waiting.splice(0);
    if (waiters.length > 0) for (const w of waiters) w.reject(error);
    else this.failure = { error };
  }

  next(): Promise<IteratorResult<T, undefined>> {
    if (this.queue.length > 0) return Promise.resolve({ value: this.queue.shift()!, done: false });
    if (this.failure) {
      const { error } = this.failure;
      this.failure = null;
      return Promise.reject(error);
    }
    if (this.done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
  }

  return(): Promise<IteratorResult<T, undefined>> {
    this.queue.length = 0;
    this.failure = null;
    this.end();
    return Promise.resolve({ value: undefined, done: true });
  }

  throw(error: unknown): Promise<IteratorResult<T, undefined>> {
    this.queue.length = 0;
    this.failure = null;
    this.end();
    return Promise.reject(error);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.return();
  }

  private close(): void {
    this.done = true;
    this.onClose();
  }
}
