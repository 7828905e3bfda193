import type { DocumentNode, GraphQLSchema, OperationDefinitionNode } from 'graphql';
import type { UsageReport } from '@halo/kit';
import { operationUsage, type OperationUsage } from './coordinates';

const HOUR_MS = 3_600_000;

export type { UsageReport };

/** One executed operation as the recorder knows it: analysed once, off the request path. */
interface OperationEntry {
  schema: GraphQLSchema;
  document: DocumentNode;
  operation: OperationDefinitionNode;
  /** undefined until analysed; null when the analysis failed (never reported). */
  usage: OperationUsage | null | undefined;
}

interface HourBucket {
  start: number;
  counts: Map<OperationEntry, Map<string, number>>;
}

/**
 * Counts executed operations per hour, operation and client, in bounded memory.
 *
 * Per request the cost is a few Map lookups and an increment: an operation is known by its
 * (cached, parsed) document node, so the same operation text is never parsed, visited or hashed
 * again. A new operation is analysed later (`setImmediate`, after the response is on its way):
 * its signature, hash and schema coordinates. At most `maxPairs` distinct (operation, client)
 * pairs are held between two drains; a request that would add one more is counted as dropped.
 */
export class UsageRecorder {
  private readonly entries = new WeakMap<OperationDefinitionNode, OperationEntry>();
  private readonly pending: OperationEntry[] = [];
  private analysing = false;
  private buckets: HourBucket[] = [];
  private current: HourBucket | null = null;
  private currentEnd = 0;
  private pairs = 0;
  /** Requests not counted because the bound was reached (cumulative). */
  dropped = 0;

  constructor(
    private readonly maxPairs: number,
    /** What an operation is reduced to (tests count the calls). */
    private readonly analyse: typeof operationUsage = operationUsage,
  ) {}

  record(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, client: string, now = Date.now()): void {
    if (now >= this.currentEnd || this.current === null) this.openHour(now);
    let entry = this.entries.get(operation);
    // The same node validated against another schema (a new supergraph): analysed again.
    if (entry === undefined || entry.schema !== schema) entry = this.track(schema, document, operation);
    const counts = this.current!.counts;
    let byClient = counts.get(entry);
    const n = byClient?.get(client);
    if (n !== undefined) {
      byClient!.set(client, n + 1);
      return;
    }
    if (this.pairs >= this.maxPairs) {
      this.dropped++;
      return;
    }
    this.pairs++;
    if (byClient === undefined) counts.set(entry, (byClient = new Map<string, number>()));
    byClient.set(client, 1);
  }

  /** Distinct (operation, client) pairs held now. */
  get size(): number {
    return this.pairs;
  }

  /** Everything counted since the last drain, as reports (merged by hour, hash and client). */
  drain(): UsageReport[] {
    this.analysePending();
    const buckets = this.current ? [...this.buckets, this.current] : this.buckets;
    this.buckets = [];
    this.current = null;
    this.pairs = 0;
    const merged = new Map<string, UsageReport>();
    for (const bucket of buckets) {
      const hour = new Date(bucket.start).toISOString();
      for (const [entry, byClient] of bucket.counts) {
        const usage = entry.usage;
        if (!usage) continue;
        for (const [client, count] of byClient) {
          const key = `${hour}\n${usage.hash}\n${client}`;
          const known = merged.get(key);
          if (known) known.count += count;
          else
            merged.set(key, {
              hour,
              client,
              operation: { hash: usage.hash, name: usage.name, body: usage.body },
              coordinates: usage.coordinates,
              count,
            });
        }
      }
    }
    return [...merged.values()];
  }

  private openHour(now: number): void {
    if (this.current && this.current.counts.size > 0) this.buckets.push(this.current);
    const start = now - (now % HOUR_MS);
    this.current = { start, counts: new Map() };
    this.currentEnd = start + HOUR_MS;
  }

  private track(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): OperationEntry {
    const entry: OperationEntry = { schema, document, operation, usage: undefined };
    this.entries.set(operation, entry);
    this.pending.push(entry);
    if (!this.analysing) {
      this.analysing = true;
      setImmediate(() => this.analysePending());
    }
    return entry;
  }

  private analysePending(): void {
    this.analysing = false;
    for (const entry of this.pending.splice(0)) {
      if (entry.usage !== undefined) continue;
      try {
        entry.usage = this.analyse(entry.schema, entry.document, entry.operation);
      } catch {
        entry.usage = null;
      }
    }
  }
}
