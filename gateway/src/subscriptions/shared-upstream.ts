import type { Client } from 'graphql-ws';
import type { FormattedExecutionResult, GraphQLError } from 'graphql';
import type { Logger } from '@halo/kit/logging';
import { disposeUpstream, endUpstream, expiryOf } from './connection';
import { error, formatError, type SubscriptionContext } from './context';
import type { EntityResolver } from './entities';
import type { EventChannel } from './event-channel';
import { SharedResult } from './sharing';

/** How long before its owner's token expires a shared upstream is handed to another subscriber. */
export const HANDOVER_LEAD_MS = 30_000;
/** The most events of the old upstream remembered to find the seam of a handover. */
const MAX_SEAM = 1_000;

/** A subscriber that let MAX_BEHIND_BYTES pile up for it (./ws-frames.ts): it ends, the others go on. */
const SLOW_CONSUMER = () => error('Too far behind this subscription: subscribe again', 'SLOW_CONSUMER');

/** What the group needs from UpstreamSubscriptions: an upstream socket with one caller's credentials. */
export interface UpstreamOpener {
  open(ctx: SubscriptionContext): Client;
  failure(err: unknown, ctx: SubscriptionContext): GraphQLError;
}

export type Channel = EventChannel<FormattedExecutionResult | SharedResult>;

/** One upstream subscription, opened with the credentials of `owner`. */
interface Source {
  owner: SubscriptionContext;
  client: Client;
  events: AsyncIterableIterator<unknown>;
  /** During a handover: what the new source sent before the old one caught up with it. */
  held: { raw: string; event: unknown }[];
  /** During a handover, on the old source: the events it delivered since the new one opened. */
  since: string[] | null;
  /** After a handover whose seam the old source had passed: the new source's events already delivered. */
  skip: string[];
  ended: boolean;
  /** When the token it was opened with expires (ms; Infinity: none): the subgraph ends it then. */
  expiry: number;
}

/**
 * Subscribers of one caller-independent subscription (equal document, operation and variables;
 * ./sharing.ts) sharing one upstream subscription, one entity resolution and one serialisation per
 * event (docs/adr/0011). The upstream is opened with one subscriber's credentials (the owner);
 * when the owner leaves, or its token is about to expire, it is handed over make-before-break to
 * the subscriber whose token lives longest: the new upstream opens while the old one still
 * delivers, and the two are joined where the new one's first event shows in the old one's stream,
 * so the others see no gap and no duplicate. The last subscriber leaving ends it.
 */
export class SharedUpstream {
  readonly members = new Map<Channel, SubscriptionContext>();
  /** The members' contexts (each subscription has its own). */
  private readonly subscribed = new Set<SubscriptionContext>();
  private source: Source | null = null;
  /** The source taking over during a handover. */
  private next: Source | null = null;
  private handoverTimer: NodeJS.Timeout | undefined;
  /** The owner's token is near its expiry and nobody's outlived it yet: the next one to join takes over. */
  private handoverDue = false;
  /** Events in upstream order, resolved and delivered one at a time. */
  private delivery: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly opener: UpstreamOpener,
    private readonly entities: EntityResolver,
    private readonly log: Logger,
    private readonly onEmpty: () => void,
  ) {}

  join(channel: Channel, ctx: SubscriptionContext): void {
    this.members.set(channel, ctx);
    this.subscribed.add(ctx);
    if (!this.source) this.source = this.start(ctx);
    else if (this.handoverDue) this.handover();
  }

  leave(channel: Channel): void {
    const ctx = this.members.get(channel);
    if (!ctx || !this.members.delete(channel)) return;
    this.subscribed.delete(ctx);
    if (this.members.size === 0) return this.close();
    if (this.source?.owner === ctx && !this.next) this.handover();
  }

  /** Opens an upstream with `owner`'s credentials and pipes it; the handover timer follows the owner's token. */
  private start(owner: SubscriptionContext): Source {
    const client = this.opener.open(owner);
    const events = client.iterate({
      query: owner.plan.query,
      variables: owner.variables,
      ...(owner.plan.operationName ? { operationName: owner.plan.operationName } : {}),
    });
    const expiry = tokenExpiry(owner);
    const source: Source = { owner, client, events, held: [], since: null, skip: [], ended: false, expiry };
    void this.pipe(source);
    this.armHandover(owner);
    return source;
  }

  private armHandover(owner: SubscriptionContext): void {
    clearTimeout(this.handoverTimer);
    this.handoverDue = false;
    const expires = expiryOf(owner.connection.authorization);
    if (expires === null) return;
    const wait = Math.max(0, expires - HANDOVER_LEAD_MS - Date.now());
    this.handoverTimer = setTimeout(
      () => {
        this.handoverDue = true;
        this.handover();
      },
      Math.min(wait, 2 ** 31 - 1),
    );
    this.handoverTimer.unref();
  }

  /**
   * Make-before-break: the subscriber whose token lives longest opens the next upstream. While the
   * owner stays, only for a token that outlives the current upstream's: another subscriber's, or
   * the owner's own once renewed (an API key's connection renews its token, ./connection.ts).
   * Everyone else's socket closes with their own token before then.
   */
  private handover(): void {
    if (this.closed || this.next || !this.source) return;
    const current = this.source;
    let best: SubscriptionContext | undefined;
    let bestExpiry = this.isMember(current.owner) ? current.expiry : -Infinity;
    for (const ctx of this.members.values()) {
      // Read now, not at join: a renewed token counts with its new expiry.
      const expiry = tokenExpiry(ctx);
      if (expiry > bestExpiry) [best, bestExpiry] = [ctx, expiry];
    }
    if (!best) return;
    current.since = [];
    this.next = this.start(best);
  }

  /** A member's connection renewed its token: a handover waiting for a longer-lived token may go now. */
  renewed(): void {
    if (this.handoverDue) this.handover();
  }

  /** Whether one of the members subscribes over `connection`. */
  hasConnection(connection: SubscriptionContext['connection']): boolean {
    for (const ctx of this.members.values()) if (ctx.connection === connection) return true;
    return false;
  }

  private async pipe(source: Source): Promise<void> {
    try {
      for await (const event of source.events) {
        if (source.ended) return;
        this.receive(source, event);
      }
      this.ended(source, null);
    } catch (err) {
      this.ended(source, err);
    }
  }

  /** One upstream event: delivered, held or dropped where two sources overlap. */
  private receive(source: Source, event: unknown): void {
    if (source !== this.source && source !== this.next) return;
    if (!this.next && source.skip.length === 0) return this.deliver(event);
    const raw = JSON.stringify(event);
    if (source.skip.length > 0) {
      // Just handed over: the old source delivered these already.
      if (source.skip[0] === raw) return void source.skip.shift();
      source.skip = [];
    }
    if (source === this.source) {
      if (!this.next) return this.deliver(event);
      // The old source, while the next one opens: deliver; where it reaches what the next one holds, join.
      this.deliver(event);
      const next = this.next;
      if (next.held.length === 0) {
        // Bounded: a next source that stays silent this long has missed nothing the old one sent.
        if (source.since && source.since.push(raw) > MAX_SEAM) source.since.shift();
        return;
      }
      if (next.held[0]!.raw !== raw) return;
      next.held.shift();
      return this.switchTo(next);
    }
    // The next source. Its first event either was delivered already by the old one (join there)
    // or is still to come from it (hold it and what follows).
    const at = source.held.length === 0 ? (this.source?.since?.indexOf(raw) ?? -1) : -1;
    if (at >= 0) {
      source.skip = this.source!.since!.slice(at + 1);
      return this.switchTo(source);
    }
    source.held.push({ raw, event });
  }

  private switchTo(next: Source): void {
    const old = this.source!;
    this.stop(old);
    this.source = next;
    this.next = null;
    for (const { event } of next.held.splice(0)) this.deliver(event);
    // Its owner left while it opened: on to the next.
    if (!this.isMember(next.owner)) this.handover();
  }

  /** Every subscription has its own context: a member's is in `subscribed` while it subscribes. */
  private isMember(ctx: SubscriptionContext): boolean {
    return this.subscribed.has(ctx);
  }

  private ended(source: Source, err: unknown): void {
    if (source.ended || this.closed) return;
    if (source === this.next) {
      // The next source failed: the old one goes on; the next handover tries again.
      this.log.warn({ message: (err as Error | null)?.message }, 'shared subscription handover failed');
      this.stop(source);
      this.next = null;
      if (this.source) this.source.since = null;
      if (this.source) this.armHandover(this.source.owner);
      return;
    }
    if (source === this.source && this.next) return this.switchTo(this.next);
    source.ended = true;
    if (err !== null && this.members.size > 0 && !this.ownerValid(source.owner)) {
      // Chat closed it as its owner's token expired before the owner's socket closed here and
      // the handover ran (a race of timers): open it again for the others (a gap is possible),
      // with a member whose token is still valid; none left, every member's own expiry ends it.
      const valid = [...this.members.values()].find((ctx) => tokenExpiry(ctx) > Date.now());
      if (valid) {
        this.stop(source);
        this.source = null;
        this.source = this.start(valid);
        this.handover();
        return;
      }
    }
    // The upstream itself ended: every subscriber gets the same end, in order after the events.
    const ctx = source.owner;
    const failure = err === null ? null : this.opener.failure(err, ctx);
    this.queue(() => {
      for (const channel of [...this.members.keys()]) {
        if (failure) channel.fail(failure);
        else channel.end();
      }
    });
  }

  /** Whether the owner still subscribes and its token has not expired. */
  private ownerValid(owner: SubscriptionContext): boolean {
    return this.isMember(owner) && tokenExpiry(owner) > Date.now();
  }

  /** Resolves one event's entity parts once and hands the same result to every subscriber. */
  private deliver(event: unknown): void {
    this.queue(async () => {
      const first = this.members.values().next().value;
      if (!first || this.closed) return;
      const resolved = await this.entities.resolve(event as FormattedExecutionResult, first);
      const result = new SharedResult(resolved.errors ? { ...resolved, errors: resolved.errors.map(formatError) } : resolved);
      // Over WebSocket each subscriber's frame is written to its socket here, one after the other
      // in one go (./ws-frames.ts); over SSE the stream writes the event serialised once.
      for (const [channel, ctx] of this.members) {
        if (!ctx.direct) channel.push(result);
        else if (ctx.direct.write(result) === 'slow') channel.fail(SLOW_CONSUMER());
      }
    });
  }

  /**
   * Runs `step` after every step queued before it. A step that throws is logged and the queue goes
   * on: one bad event must not stop the events after it, nor leave a rejection nobody handles.
   */
  private queue(step: () => void | Promise<void>): void {
    this.delivery = this.delivery.then(step).catch((err: unknown) => {
      this.log.error({ err }, 'shared subscription event could not be delivered');
    });
  }

  private stop(source: Source): void {
    source.ended = true;
    endUpstream(source.events);
    disposeUpstream(source.client);
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.handoverTimer);
    if (this.source) this.stop(this.source);
    if (this.next) this.stop(this.next);
    this.source = this.next = null;
    this.onEmpty();
  }
}

/** When the token a subscriber's connection holds now expires (ms; Infinity: none). */
function tokenExpiry(ctx: SubscriptionContext): number {
  return expiryOf(ctx.connection.authorization) ?? Infinity;
}
