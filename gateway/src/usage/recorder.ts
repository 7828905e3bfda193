import type { DocumentNode, GraphQLSchema, OperationDefinitionNode } from 'graphql';
import type { UsageReport } from '@halo/contracts/wire';
import type { UsageClient } from './clients';
import { enumValuesOf, enumVariablesOf, MAX_COORDINATES, operationUsage, type EnumVariable, type OperationUsage } from './coordinates';

const HOUR_MS = 3_600_000;

export type { UsageReport };

/** One executed operation as the recorder knows it: analysed once, off the request path. */
interface OperationEntry {
  schema: GraphQLSchema;
  document: DocumentNode;
  operation: OperationDefinitionNode;
  /** undefined until analysed; null when the analysis failed (never reported). */
  usage: OperationUsage | null | undefined;
  /** Its variables that carry enum values (most operations: none, and nothing is read per request). */
  enumVariables: readonly EnumVariable[];
  /** The `Enum.VALUE`s its requests sent in variables (bounded). */
  enumValues: Set<string> | undefined;
}

/** Enum values remembered per operation from its variables: beyond, more are not recorded. */
const MAX_ENUM_VALUES = 1_000;

/** One operation's requests in one hour by one client version, and the estimated cost of those that had one. */
interface Tally {
  count: number;
  costSum: number;
  costed: number;
}

/** Tallies of one operation in one hour: per client name, then per client version ('' unknown). */
type ClientCounts = Map<string, Map<string, Tally>>;

interface HourBucket {
  start: number;
  counts: Map<OperationEntry, ClientCounts>;
}

/**
 * Counts executed operations per hour, operation and client (name and version), in bounded memory,
 * with the sum of their estimated costs (the Studio's "top operations by cost").
 *
 * Per request the cost is a few Map lookups and an increment: an operation is known by its
 * (cached, parsed) document node, so the same operation text is never parsed, visited or hashed
 * again. A new operation is analysed later (`setImmediate`, after the response is on its way):
 * its signature, hash and schema coordinates. At most `maxPairs` distinct (operation, client name,
 * client version) triples are held between two drains; a request that would add one more is
 * counted as dropped.
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

  record(
    schema: GraphQLSchema,
    document: DocumentNode,
    operation: OperationDefinitionNode,
    /** A name alone: the version is unknown. */
    client: UsageClient | string,
    now = Date.now(),
    variables?: Readonly<Record<string, unknown>> | null,
    /** Its estimated cost, as the operation policy computed it with these variables (undefined: unknown). */
    cost?: number,
  ): void {
    if (now >= this.currentEnd || this.current === null) this.openHour(now);
    let entry = this.entries.get(operation);
    // The same node validated against another schema (a new supergraph): analysed again.
    if (entry === undefined || entry.schema !== schema) entry = this.track(schema, document, operation);
    if (entry.enumVariables.length > 0 && variables) {
      enumValuesOf(variables, entry.enumVariables, (entry.enumValues ??= new Set()), MAX_ENUM_VALUES);
    }
    const name = typeof client === 'string' ? client : client.name;
    const version = typeof client === 'string' ? '' : client.version;
    const counts = this.current!.counts;
    let byClient = counts.get(entry);
    let byVersion = byClient?.get(name);
    let tally = byVersion?.get(version);
    if (tally === undefined) {
      if (this.pairs >= this.maxPairs) {
        this.dropped++;
        return;
      }
      this.pairs++;
      if (byClient === undefined) counts.set(entry, (byClient = new Map<string, Map<string, Tally>>()));
      if (byVersion === undefined) byClient.set(name, (byVersion = new Map<string, Tally>()));
      byVersion.set(version, (tally = { count: 0, costSum: 0, costed: 0 }));
    }
    tally.count++;
    if (cost !== undefined) {
      tally.costSum += cost;
      tally.costed++;
    }
  }

  /** Distinct (operation, client name, client version) triples held now. */
  get size(): number {
    return this.pairs;
  }

  /** Everything counted since the last drain, as reports (merged by hour, hash, client and version). */
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
        const coordinates = entry.enumValues?.size ? withEnumValues(usage.coordinates, entry.enumValues) : usage.coordinates;
        for (const [client, byVersion] of byClient) {
          for (const [version, tally] of byVersion) {
            const key = `${hour}\n${usage.hash}\n${client}\n${version}`;
            const known = merged.get(key);
            if (known) {
              known.count += tally.count;
              known.cost!.sum += tally.costSum;
              known.cost!.requests += tally.costed;
              if (known.coordinates !== coordinates) known.coordinates = withEnumValues(known.coordinates, coordinates);
            } else
              merged.set(key, {
                hour,
                client,
                // Absent when unknown, as a report from before versions were recorded.
                ...(version ? { clientVersion: version } : {}),
                operation: { hash: usage.hash, name: usage.name, body: usage.body },
                coordinates,
                count: tally.count,
                cost: { sum: tally.costSum, requests: tally.costed },
              });
          }
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
    const entry: OperationEntry = {
      schema,
      document,
      operation,
      usage: undefined,
      enumVariables: operation.variableDefinitions?.length ? enumVariablesOf(schema, operation) : [],
      enumValues: undefined,
    };
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

/** The coordinates of an operation with the enum values its variables named, sorted, bounded. */
function withEnumValues(coordinates: readonly string[], more: Iterable<string>): string[] {
  return [...new Set([...coordinates, ...more])].sort().slice(0, MAX_COORDINATES);
}
