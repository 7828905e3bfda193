/** What a resumed stream needs of an event: an id that grows in send order (a chat's message ids do). */
export interface Ordered {
  id: number;
}

/**
 * A subscription resumed after a known id: first the `replayed` events (read from storage after
 * the live stream was already established), then the `live` ones — minus any the replay already
 * delivered. Because the live stream started before the replay was read, nothing falls between
 * the two; because live events arrive in id order, "already delivered" is "id ≤ the last one".
 */
export class ResumedStream<T extends Ordered> implements AsyncIterableIterator<T> {
  private readonly replayed: T[];
  private last: number;

  constructor(
    replayed: readonly T[],
    private readonly live: AsyncIterableIterator<T>,
    after: number,
  ) {
    this.replayed = [...replayed];
    this.last = after;
  }

  async next(): Promise<IteratorResult<T>> {
    const queued = this.replayed.shift();
    if (queued) return this.deliver(queued);
    for (;;) {
      const step = await this.live.next();
      if (step.done) return step;
      if (step.value.id > this.last) return this.deliver(step.value);
    }
  }

  return(): Promise<IteratorResult<T>> {
    this.replayed.length = 0;
    return this.live.return ? this.live.return() : Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }

  private deliver(value: T): IteratorResult<T> {
    this.last = value.id;
    return { value, done: false };
  }
}

/** An event of a chat's channel other than a message: a member left or was removed (private chats). */
export interface MemberRemoved {
  kind: 'removed';
  chatId: string;
  userId: number;
}

/**
 * One member's view of a chat's channel: its messages, while they remain a member. The removal of
 * `userId` ends the stream with `removedError()`; other members' removals are not theirs to see.
 */
export class MemberStream<T extends object> implements AsyncIterableIterator<T> {
  constructor(
    private readonly events: AsyncIterableIterator<T | MemberRemoved>,
    private readonly userId: number,
    private readonly removedError: () => Error,
  ) {}

  async next(): Promise<IteratorResult<T>> {
    for (;;) {
      const step = await this.events.next();
      if (step.done) return step;
      const event = step.value;
      if (!('kind' in event && event.kind === 'removed')) return { value: event as T, done: false };
      if (event.userId === this.userId) {
        await this.return();
        throw this.removedError();
      }
    }
  }

  return(): Promise<IteratorResult<T>> {
    return this.events.return ? (this.events.return() as Promise<IteratorResult<T>>) : Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }
}
