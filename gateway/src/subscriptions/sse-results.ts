import { GraphQLError, type FormattedExecutionResult } from 'graphql';
import type { ExecutionResult } from 'graphql-sse';
import { formatError } from './context';
import type { EventChannel } from './event-channel';
import { SharedResult } from './sharing';

/**
 * What graphql-sse streams for one operation. It iterates an operation's results and, when the
 * iteration throws, drops the stream without a word: so a subscription's end with an error (the
 * subgraph went away, a new supergraph, an expired token) becomes one last `next` event with
 * `errors`, then `complete` — what a graphql-ws client gets as an `error` message. `return()`
 * reaches the channel at once, even while an event is awaited, so a client that leaves ends
 * the upstream subscription.
 */
export class ErrorsAsEvents implements AsyncGenerator<ExecutionResult, undefined, undefined> {
  private ended = false;
  /**
   * Shared results yielded and not yet written, in order: graphql-sse writes each as a placeholder
   * (./sharing.ts) that the stream replaces with the event serialised once (./sse.ts).
   */
  readonly shared: SharedResult[] = [];

  constructor(private readonly channel: EventChannel<FormattedExecutionResult | SharedResult>) {}

  async next(): Promise<IteratorResult<ExecutionResult, undefined>> {
    if (this.ended) return { value: undefined, done: true };
    try {
      const r = await this.channel.next();
      if (r.done) return { value: undefined, done: true };
      if (r.value instanceof SharedResult) {
        this.shared.push(r.value);
        return { value: r.value as unknown as ExecutionResult, done: false };
      }
      const value = r.value.errors ? { ...r.value, errors: r.value.errors.map(formatError) } : r.value;
      return { value: value as ExecutionResult, done: false };
    } catch (err) {
      this.ended = true;
      const errors = [
        formatError(err instanceof GraphQLError ? err : new GraphQLError('Service unavailable', { extensions: { code: 'UNAVAILABLE' } })),
      ];
      return { value: { errors } as unknown as ExecutionResult, done: false };
    }
  }

  async return(): Promise<IteratorResult<ExecutionResult, undefined>> {
    this.ended = true;
    await this.channel.return();
    return { value: undefined, done: true };
  }

  async throw(err: unknown): Promise<IteratorResult<ExecutionResult, undefined>> {
    this.ended = true;
    await this.channel.return();
    throw err;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.return();
  }
}

/** One result as a stream of one (graphql-sse takes a bare result only when it has `data`). */
// eslint-disable-next-line @typescript-eslint/require-await -- async: graphql-sse streams only what has Symbol.asyncIterator
export async function* once(result: FormattedExecutionResult | { errors: unknown[] }): AsyncGenerator<ExecutionResult> {
  yield result as ExecutionResult;
}
