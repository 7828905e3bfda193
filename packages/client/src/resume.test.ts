import { GraphQLRequestError } from './errors';
import type { GraphQLOperation, GraphQLResult } from './graphql';
import { defaultIsAfter, resumable } from './resume';
import type { SubscriptionSink } from './subscriptions';

/** The resume bookkeeping without a transport: a recorded `subscribe` stands in for graphql-ws/graphql-sse. */
interface Data {
  newMessage: { id: string };
}
const ev = (id: string): GraphQLResult<Data> => ({ data: { newMessage: { id } } });

function recorder() {
  const calls: { op: GraphQLOperation<unknown>; sink: SubscriptionSink<Data>; stopped: boolean }[] = [];
  const subscribe = (op: GraphQLOperation<unknown>, sink: SubscriptionSink<Data>) => {
    const call = { op, sink, stopped: false };
    calls.push(call);
    return () => void (call.stopped = true);
  };
  return { calls, subscribe, last: () => calls[calls.length - 1]! };
}

const tooLong = () => new GraphQLRequestError([{ message: 'too far', extensions: { code: 'REPLAY_TOO_LONG' } }], null, null);
const flush = () => new Promise((r) => setImmediate(r));
const rethrow = (err: unknown) => {
  throw err;
};

describe('resumable', () => {
  it('writes the last delivered id into the variables the transport resends, and drops what was delivered already', () => {
    const t = recorder();
    const got: string[] = [];
    resumable(
      t.subscribe,
      { query: 'q', variables: { c: 'room' } },
      { next: (r) => got.push(r.data!.newMessage.id), error: rethrow },
      {
        cursorVariable: 'after',
        idOf: (d: Data) => d.newMessage.id,
      },
    );
    const { op, sink } = t.last();
    expect(op.variables).toEqual({ c: 'room' });
    sink.next(ev('8'));
    sink.next(ev('9'));
    // What graphql-ws would send on its own reconnect: the same object, now resuming after 9.
    expect(op.variables).toEqual({ c: 'room', after: '9' });
    // A replay overlapping what was delivered: 9 again, then 10.
    sink.next(ev('9'));
    sink.next(ev('10'));
    expect(got).toEqual(['8', '9', '10']);
  });

  it('REPLAY_TOO_LONG: delivers the gap from fillGap, then subscribes again after its last event', async () => {
    const t = recorder();
    const got: string[] = [];
    const asked: string[] = [];
    resumable(
      t.subscribe,
      { query: 'q', variables: { after: '5' } },
      { next: (r) => got.push(r.data!.newMessage.id), error: rethrow },
      {
        cursorVariable: 'after',
        idOf: (d: Data) => d.newMessage.id,
        fillGap: async (cursor) => {
          asked.push(cursor);
          return ['5', '6', '7'].map((id) => ({ newMessage: { id } }));
        },
      },
    );
    t.last().sink.error(tooLong());
    await flush();
    expect(asked).toEqual(['5']);
    expect(got).toEqual(['6', '7']);
    expect(t.calls).toHaveLength(2);
    expect(t.last().op.variables).toEqual({ after: '7' });
  });

  it('REPLAY_TOO_LONG without fillGap, or with fills that make no progress, ends the subscription with the error', async () => {
    const t = recorder();
    const errors: unknown[] = [];
    resumable(
      t.subscribe,
      { query: 'q', variables: { after: '1' } },
      { next: () => undefined, error: (e) => errors.push(e) },
      {
        cursorVariable: 'after',
        idOf: (d: Data) => d.newMessage.id,
      },
    );
    t.last().sink.error(tooLong());
    expect(errors).toHaveLength(1);

    const u = recorder();
    const more: unknown[] = [];
    resumable(
      u.subscribe,
      { query: 'q', variables: { after: '1' } },
      { next: () => undefined, error: (e) => more.push(e) },
      {
        cursorVariable: 'after',
        idOf: (d: Data) => d.newMessage.id,
        fillGap: async () => [],
      },
    );
    for (let i = 0; i < 3; i++) {
      u.last().sink.error(tooLong());
      await flush();
    }
    expect(more).toHaveLength(1);
    expect(u.calls).toHaveLength(3);
  });

  it('unsubscribing stops the current transport subscription', () => {
    const t = recorder();
    const stop = resumable(
      t.subscribe,
      { query: 'q' },
      { next: () => undefined, error: rethrow },
      { cursorVariable: 'after', idOf: () => null },
    );
    stop();
    expect(t.last().stopped).toBe(true);
  });

  it('orders decimal ids as numbers, of any length', () => {
    expect(defaultIsAfter('10', '9')).toBe(true);
    expect(defaultIsAfter('9', '10')).toBe(false);
    expect(defaultIsAfter('123456789012345678901', '123456789012345678900')).toBe(true);
    expect(defaultIsAfter('b', 'a')).toBe(true);
    expect(defaultIsAfter('a', 'a')).toBe(false);
  });
});
