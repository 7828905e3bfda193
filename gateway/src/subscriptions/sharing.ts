import { getArgumentValues, type FormattedExecutionResult, type GraphQLFormattedError } from 'graphql';
import WebSocket from 'ws';
import type { SubscriptionContext } from './context';

/**
 * Which subscriptions share one upstream subscription and one serialisation (docs/adr/0011).
 *
 * A subscription is shared only when its events are the same for every caller allowed to
 * subscribe: the plan found nothing caller-dependent in its selection (`plan.sharing`), and its
 * root field is listed here with a rule on its arguments. Anything not listed keeps its own
 * upstream subscription, with its caller's credentials, as before. Each caller is still admitted
 * on its own (credentials, `@authenticated`, scopes, depth and cost, rate limits) before joining.
 */
const SHAREABLE_ROOTS: Readonly<Record<string, (args: Record<string, unknown>) => boolean>> = {
  // A chat addressed by a free-form id is open to every signed-in caller; a private chat (`~…`,
  // chat trims the id) checks membership per caller and ends a removed member's stream; `after`
  // replays from the caller's own position.
  'Subscription.newMessage': (args) =>
    typeof args.chatId === 'string' && !args.chatId.trim().startsWith('~') && (args.after === undefined || args.after === null),
};

/** The key subscribers share an upstream subscription by, or null: this one keeps its own. */
export function shareKeyOf(ctx: SubscriptionContext): string | null {
  const sharing = ctx.plan.sharing;
  if (!sharing) return null;
  const rule = SHAREABLE_ROOTS[sharing.rootCoordinate];
  if (!rule) return null;
  let args: Record<string, unknown>;
  try {
    args = getArgumentValues(sharing.rootDefinition, sharing.rootField, ctx.variables);
  } catch {
    return null;
  }
  if (!rule(args)) return null;
  // The variables in the order the operation declares them: equal operations, equal keys.
  const values = (ctx.operation.variableDefinitions ?? []).map((d) => ctx.variables[d.variable.name.value] ?? null);
  return `${ctx.plan.graph}\n${sharing.document}\n${ctx.plan.operationName ?? ''}\n${JSON.stringify(values)}`;
}

/**
 * Stands for a shared payload in the JSON the protocol libraries write (graphql-ws and
 * graphql-sse stringify every message themselves); the transports put the bytes serialised once
 * in its place. A `next` payload is always an object, so this string never is one.
 */
const PLACEHOLDER = 'halo:shared-payload';
const WS_TAIL = `"payload":${JSON.stringify(PLACEHOLDER)}}`;
/** What graphql-sse writes for a shared result (distinct connections mode: no operation id). */
export const SSE_PLACEHOLDER_CHUNK = `event: next\ndata: ${JSON.stringify(PLACEHOLDER)}\n\n`;
const BRACE = Buffer.from('}');

/** The result graphql-ws is stringifying right now (toJSON and send run in one synchronous step). */
const stringifying: { current: SharedResult | null } = { current: null };

/** One event of a shared subscription: serialised once, whoever and however many receive it. */
export class SharedResult {
  private json: Buffer | undefined;
  private sse: Buffer | undefined;

  constructor(readonly result: FormattedExecutionResult) {}

  get errors(): readonly GraphQLFormattedError[] | undefined {
    return this.result.errors;
  }

  /** The payload's JSON, for graphql-ws `next` messages. */
  payload(): Buffer {
    return (this.json ??= Buffer.from(JSON.stringify(this.result)));
  }

  /** The whole `next` event of an event stream. */
  sseEvent(): Buffer {
    return (this.sse ??= Buffer.concat([Buffer.from('event: next\ndata: '), this.payload(), Buffer.from('\n\n')]));
  }

  toJSON(): string {
    stringifying.current = this;
    return PLACEHOLDER;
  }
}

/**
 * The gateway's server-side sockets: a graphql-ws `next` message of a shared result is the
 * message's own head (`{"id":…,"type":"next",`) and the payload bytes serialised once.
 */
export class SharingWebSocket extends WebSocket {
  override send(data: unknown, options?: unknown, cb?: unknown): void {
    const shared = stringifying.current;
    stringifying.current = null;
    if (shared && typeof data === 'string' && data.endsWith(WS_TAIL)) {
      const head = Buffer.from(`${data.slice(0, data.length - WS_TAIL.length)}"payload":`);
      const frame = Buffer.concat([head, shared.payload(), BRACE]);
      const callback = typeof options === 'function' ? options : cb;
      const opts = typeof options === 'object' && options !== null ? options : {};
      return super.send(frame, { ...opts, binary: false }, callback as (err?: Error) => void);
    }
    return super.send(data as string, options as never, cb as never);
  }
}
