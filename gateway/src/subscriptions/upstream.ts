import { createClient, type Client } from 'graphql-ws';
import { GraphQLError, type FormattedExecutionResult, type GraphQLFormattedError } from 'graphql';
import WebSocket from 'ws';
import type { Logger } from '@halo/kit/logging';
import { endUpstream } from './connection';
import { error, type Connection, type SubscriptionContext } from './context';
import type { EntityResolver } from './entities';
import { EventChannel } from './event-channel';
import { SharedUpstream, type Channel } from './shared-upstream';
import { shareKeyOf } from './sharing';

/**
 * Subscriptions forwarded to the subgraphs that own them, the events passed on in order with
 * their entity parts filled. A subscription whose events do not depend on the caller (./sharing.ts)
 * joins the one upstream subscription of its equals (./shared-upstream.ts, docs/adr/0011); any
 * other has its own, on one graphql-ws client per client connection and subgraph.
 */
export class UpstreamSubscriptions {
  /** Every live subscription, to judge them again on a new supergraph. */
  readonly active = new Map<Channel, SubscriptionContext>();
  /** Shared upstream subscriptions by their key (./sharing.ts). */
  private readonly shared = new Map<string, SharedUpstream>();
  /** Groups made for one API key subscription each (keys `own:<n>`). */
  private ownGroups = 0;

  constructor(
    /** Each subgraph's GraphQL URL as served now. */
    private readonly subgraphUrls: Readonly<Record<string, string>>,
    private readonly entities: EntityResolver,
    private readonly log: Logger,
  ) {}

  /** Upstream subscriptions open to the subgraphs (a shared one counts once). */
  upstreamCount(): number {
    let own = this.active.size;
    for (const group of this.shared.values()) own -= group.members.size;
    return own + this.shared.size;
  }

  subscribe(ctx: SubscriptionContext): Channel {
    // An API key's subscription has a group of its own even when nothing can share it: the
    // group's make-before-break handover moves it to the renewed token before the subgraph ends
    // the old one (./connection.ts `keepApiKeyFresh`).
    const key = shareKeyOf(ctx) ?? (ctx.connection.apiKey ? `own:${++this.ownGroups}` : null);
    return key === null ? this.subscribeAlone(ctx) : this.subscribeShared(key, ctx);
  }

  /** Ends every subscription of `connection` with `err` (its credentials are no longer good). */
  endConnection(connection: Connection, err: GraphQLError): void {
    for (const [channel, ctx] of this.active) if (ctx.connection === connection) channel.fail(err);
  }

  /** `connection` holds a renewed token: the groups it subscribes to may hand over to it now. */
  renewed(connection: Connection): void {
    for (const group of this.shared.values()) if (group.hasConnection(connection)) group.renewed();
  }

  private subscribeShared(key: string, ctx: SubscriptionContext): Channel {
    let group = this.shared.get(key);
    if (!group) {
      const created = new SharedUpstream(this.opener, this.entities, this.log, () => {
        if (this.shared.get(key) === created) this.shared.delete(key);
      });
      this.shared.set(key, (group = created));
    }
    const joined = group;
    const channel: Channel = new EventChannel(() => {
      this.active.delete(channel);
      joined.leave(channel);
    });
    this.active.set(channel, ctx);
    try {
      joined.join(channel, ctx);
    } catch (err) {
      // No upstream could be opened (an unknown subgraph): nothing stays behind.
      this.active.delete(channel);
      joined.leave(channel);
      throw err;
    }
    return channel;
  }

  /** A shared upstream's own socket, with one subscriber's credentials and request id. */
  private readonly opener = {
    open: (ctx: SubscriptionContext) => this.createUpstreamClient(ctx.connection, ctx.plan.graph),
    failure: (err: unknown, ctx: SubscriptionContext) => this.failure(err, ctx),
  };

  private subscribeAlone(ctx: SubscriptionContext): Channel {
    const upstream = this.clientOf(ctx.connection, ctx.plan.graph).iterate({
      query: ctx.plan.query,
      variables: ctx.variables,
      ...(ctx.plan.operationName ? { operationName: ctx.plan.operationName } : {}),
    });
    const channel: Channel = new EventChannel(() => {
      this.active.delete(channel);
      endUpstream(upstream);
    });
    this.active.set(channel, ctx);
    void this.pipe(upstream, channel, ctx);
    return channel;
  }

  /** One event at a time, so the client gets them in the order the subgraph sent them. */
  private async pipe(upstream: AsyncIterable<unknown>, channel: Channel, ctx: SubscriptionContext): Promise<void> {
    try {
      for await (const event of upstream) {
        if (channel.closed) return;
        channel.push(await this.entities.resolve(event as FormattedExecutionResult, ctx));
      }
      channel.end();
    } catch (err) {
      channel.fail(this.failure(err, ctx));
    }
  }

  private clientOf(connection: Connection, graph: string): Client {
    let client = connection.upstreams.get(graph);
    if (client) return client;
    client = this.createUpstreamClient(connection, graph);
    connection.upstreams.set(graph, client);
    return client;
  }

  private createUpstreamClient(connection: Connection, graph: string): Client {
    const url = this.subgraphUrls[graph];
    if (!url) throw error(`No subgraph named ${graph}`, 'INTERNAL_SERVER_ERROR');
    return createClient({
      url: url.replace(/^http/, 'ws'),
      webSocketImpl: WebSocket,
      connectionParams: {
        ...(connection.authorization ? { authorization: connection.authorization } : {}),
        'x-request-id': connection.context.requestId,
      },
      // One socket per client connection and subgraph, open while it has subscriptions.
      lazy: true,
      // A subgraph that goes away ends the client's subscriptions with an error; the client
      // decides whether to subscribe again (graphql-ws clients retry by themselves).
      retryAttempts: 0,
      shouldRetry: () => false,
      keepAlive: 10_000,
      // A subgraph that accepts the socket but never answers (hung) ends the subscriptions with an
      // error instead of leaving them silent.
      connectionAckWaitTimeout: 10_000,
    });
  }

  private failure(err: unknown, ctx: SubscriptionContext): GraphQLError {
    // The subgraph answered with GraphQL errors: the client gets the first, code included.
    const first: unknown = Array.isArray(err) ? err[0] : undefined;
    if (isFormattedError(first)) {
      return new GraphQLError(first.message, { extensions: first.extensions ?? {} });
    }
    const code = (err as { code?: unknown }).code;
    const message = (err as { reason?: string; message?: string }).reason ?? (err as Error).message;
    this.log.warn({ requestId: ctx.connection.context.requestId, subgraph: ctx.plan.graph, code, message }, 'upstream subscription ended');
    return error('Service unavailable', 'UNAVAILABLE');
  }
}

/** A GraphQL error as a subgraph sends it: at least a string `message`. */
function isFormattedError(value: unknown): value is GraphQLFormattedError {
  return typeof value === 'object' && value !== null && typeof (value as { message?: unknown }).message === 'string';
}
