import type { FormattedExecutionResult, GraphQLFormattedError } from 'graphql';
import type { Logger } from '@halo/kit/logging';
import type { Connection, SubscriptionContext } from './context';
import { REPRESENTATIONS_VAR, type EntityFetch } from './plan';

/** How long an entity fetch's answer serves the other subscribers of the same event. */
const ENTITY_REUSE_MS = 2_000;

type EntityAnswer = { entities: (Record<string, unknown> | null)[]; errors: GraphQLFormattedError[] };

/**
 * The parts of a subscription event that other subgraphs own (`author { name }` from content),
 * fetched per event through `_entities` and merged into it.
 */
export class EntityResolver {
  /** Entity fetches in flight or just answered (see fetch). */
  private readonly recent = new Map<string, Promise<EntityAnswer>>();

  constructor(
    /** Each subgraph's GraphQL URL as served now. */
    private readonly subgraphUrls: Readonly<Record<string, string>>,
    private readonly log: Logger,
  ) {}

  /** Fills one event's entity parts from the subgraphs that own them. */
  async resolve(event: FormattedExecutionResult, ctx: SubscriptionContext): Promise<FormattedExecutionResult> {
    if (ctx.plan.fetches.length === 0 || !event.data) return event;
    const errors = [...(event.errors ?? [])] as GraphQLFormattedError[];
    await Promise.all(ctx.plan.fetches.map((f) => this.fill(event.data as Record<string, unknown>, f, ctx, errors)));
    return errors.length > 0 ? { ...event, errors } : event;
  }

  /** One entity fetch's slots in `data`: filled from its answer, or null with an UNAVAILABLE error. */
  private async fill(
    data: Record<string, unknown>,
    f: EntityFetch,
    ctx: SubscriptionContext,
    errors: GraphQLFormattedError[],
  ): Promise<void> {
    const slots = slotsAt(data, f.path);
    if (slots.length === 0) return;
    const representations = slots.map(({ value }) => {
      const rep: Record<string, unknown> = { __typename: value.__typename ?? f.typeName };
      for (const k of f.keyFields) rep[k] = value[k];
      return rep;
    });
    const variables: Record<string, unknown> = { [REPRESENTATIONS_VAR]: representations };
    for (const name of f.variableNames) variables[name] = ctx.variables[name];
    try {
      const answer = await this.fetch(f, variables, ctx.connection);
      slots.forEach((slot, i) => (slot.parent[slot.key] = answer.entities[i] ?? null));
      for (const e of answer.errors) {
        const at = typeof e.path?.[1] === 'number' ? slots[e.path[1]]?.path : undefined;
        errors.push({
          message: e.message,
          ...(at ? { path: [...at, ...(e.path?.slice(2) ?? [])] } : {}),
          ...(e.extensions ? { extensions: e.extensions } : {}),
        });
      }
    } catch (err) {
      this.log.error(
        { requestId: ctx.connection.context.requestId, subgraph: f.graph, message: (err as Error).message },
        'entity fetch for a subscription event failed',
      );
      for (const slot of slots) {
        slot.parent[slot.key] = null;
        errors.push({ message: 'Service unavailable', path: slot.path, extensions: { code: 'UNAVAILABLE' } });
      }
    }
  }

  /**
   * One `_entities` request per event and selection: the subscribers of one chat get the same
   * event within milliseconds of each other, so the answer is shared by identical requests in
   * flight and kept for `ENTITY_REUSE_MS` after. A part that depends on the caller is fetched
   * with each caller's credentials and shared only by that caller's subscriptions; any other
   * part is fetched without credentials and shared by everyone.
   */
  private fetch(f: EntityFetch, variables: Record<string, unknown>, connection: Connection): Promise<EntityAnswer> {
    const body = JSON.stringify({ query: f.query, variables });
    const authorization = f.shared ? undefined : connection.authorization;
    const key = `${f.graph}\n${authorization ?? ''}\n${body}`;
    const known = this.recent.get(key);
    if (known) return known;
    const answer = fetchEntities(this.subgraphUrls[f.graph] ?? '', body, connection.context.requestId, authorization);
    this.recent.set(key, answer);
    const forget = () => void setTimeout(() => this.recent.delete(key), ENTITY_REUSE_MS).unref();
    answer.then(forget, () => this.recent.delete(key));
    return answer;
  }
}

async function fetchEntities(url: string, body: string, requestId: string, authorization: string | undefined): Promise<EntityAnswer> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-request-id': requestId,
      ...(authorization ? { authorization } : {}),
    },
    body,
  });
  const json = (await res.json()) as { data?: { _entities?: (Record<string, unknown> | null)[] } | null; errors?: GraphQLFormattedError[] };
  return { entities: json.data?._entities ?? [], errors: json.errors ?? [] };
}

interface Slot {
  parent: Record<string | number, unknown>;
  key: string | number;
  value: Record<string, unknown>;
  path: (string | number)[];
}

/** The objects at `path` under `data` (through lists, skipping nulls), with where each sits. */
function slotsAt(data: Record<string, unknown>, path: string[]): Slot[] {
  const slots: Slot[] = [];
  const walk = (holder: Record<string, unknown>, depth: number, at: (string | number)[]) => {
    const key = path[depth]!;
    const place = (value: unknown, parent: Record<string | number, unknown>, k: string | number, p: (string | number)[]): void => {
      if (Array.isArray(value)) return value.forEach((item, i) => place(item, value as unknown as Record<number, unknown>, i, [...p, i]));
      if (!value || typeof value !== 'object') return;
      if (depth === path.length - 1) slots.push({ parent, key: k, value: value as Record<string, unknown>, path: p });
      else walk(value as Record<string, unknown>, depth + 1, p);
    };
    place(holder[key], holder, key, [...at, key]);
  };
  walk(data, 0, []);
  return slots;
}
