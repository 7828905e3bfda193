import { GraphQLRequestError } from './errors.js';
import type { GraphQLOperation, GraphQLResult } from './graphql.js';
import type { SubscriptionSink } from './subscriptions.js';

/**
 * How a subscription resumes where it left off (README "Resuming subscriptions"), for a field that
 * takes the id of the last event received and replays what followed, e.g. chat's
 * `newMessage(chatId, after)`:
 *
 * ```ts
 * { cursorVariable: 'after', idOf: (d) => d.newMessage.id }
 * ```
 */
export interface ResumeOptions<TData> {
  /** The operation's variable that carries the last delivered id (it must be declared, e.g. `$after: ID`). */
  cursorVariable: string;
  /** An event's id; ids grow in delivery order. null/undefined: the event is passed on, not counted. */
  idOf: (data: TData) => string | number | null | undefined;
  /**
   * Whether `id` comes after `last`. Default: as decimal integers (chat's message ids); pass your
   * own order for other ids.
   */
  isAfter?: (id: string, last: string) => boolean;
  /**
   * Called when the server refuses to replay that far back (`REPLAY_TOO_LONG`): the events after
   * `cursor`, oldest first, read some other way (chat: the `messages` query). They are delivered,
   * then the subscription resumes after the last of them. Without it, that error ends the
   * subscription as any other.
   */
  fillGap?: (cursor: string) => Promise<TData[]>;
}

/** The error code with which a server says "too far behind to replay" (docs/api/graphql.md "Resuming"). */
export const REPLAY_TOO_LONG = 'REPLAY_TOO_LONG';

/** Gap fills in a row that delivered nothing before the subscription gives up (no progress: not a loop). */
const MAX_IDLE_GAP_FILLS = 3;

const isIntegerText = (s: string) => /^\d+$/.test(s);

/** The default order: decimal integers as numbers (any length), anything else as distinct values never repeated. */
export function defaultIsAfter(id: string, last: string): boolean {
  if (isIntegerText(id) && isIntegerText(last)) return BigInt(id) > BigInt(last);
  return id !== last;
}

/**
 * A subscription through `subscribe` (a transport's) that delivers each event once across
 * reconnects. It owns the operation's variables object and writes the last delivered id into
 * `cursorVariable` as each event is delivered: both transports send the variables they hold at
 * every (re)subscription — graphql-ws resends this same object when it reconnects by itself, the
 * SSE transport reads it at each new stream — so a reconnect asks for what followed. Events at or
 * before the cursor (a replay overlapping what was already delivered) are dropped.
 */
export function resumable<TData>(
  subscribe: (op: GraphQLOperation<unknown>, sink: SubscriptionSink<TData>) => () => void,
  op: GraphQLOperation<unknown>,
  sink: SubscriptionSink<TData>,
  resume: ResumeOptions<TData>,
): () => void {
  const variables: Record<string, unknown> = { ...((op.variables as Record<string, unknown> | undefined) ?? {}) };
  const isAfter = resume.isAfter ?? defaultIsAfter;
  const given = variables[resume.cursorVariable];
  let cursor: string | null = typeof given === 'string' || typeof given === 'number' ? String(given) : null;
  let stop: () => void = () => undefined;
  let disposed = false;
  let idleFills = 0;

  /** Passes an event on unless it was delivered already; advances the cursor. */
  const deliver = (result: GraphQLResult<TData>): boolean => {
    const raw = result.data ? resume.idOf(result.data) : null;
    if (raw === null || raw === undefined) {
      sink.next(result);
      return false;
    }
    const id = String(raw);
    if (cursor !== null && !isAfter(id, cursor)) return false;
    cursor = id;
    variables[resume.cursorVariable] = id;
    sink.next(result);
    return true;
  };

  const fill = async (err: GraphQLRequestError, from: string, fillGap: (cursor: string) => Promise<TData[]>) => {
    let events: TData[];
    try {
      events = await fillGap(from);
    } catch (fillFailed) {
      if (!disposed) sink.error(fillFailed);
      return;
    }
    if (disposed) return;
    let delivered = 0;
    for (const data of events) if (deliver({ data })) delivered++;
    idleFills = delivered > 0 ? 0 : idleFills + 1;
    if (idleFills >= MAX_IDLE_GAP_FILLS) return sink.error(err);
    start();
  };

  const start = () => {
    if (disposed) return;
    stop = subscribe(
      { ...op, variables },
      {
        next: (result) => void deliver(result),
        error: (err) => {
          if (disposed) return;
          if (err instanceof GraphQLRequestError && err.hasCode(REPLAY_TOO_LONG) && resume.fillGap && cursor !== null) {
            return void fill(err, cursor, resume.fillGap);
          }
          sink.error(err);
        },
        complete: () => sink.complete?.(),
      },
    );
  };

  start();
  return () => {
    if (disposed) return;
    disposed = true;
    stop();
  };
}
