import { createHash } from 'node:crypto';
import { apiSchemaOf, checkOperation, costDirectivesOf, type CostDirectives, type OperationUsage, type wire } from '@halo/contracts';
import { badRequest, conflict, notFound } from '@halo/kit/errors';
import { authorizeOperationsWriter, authorOf, spendWriteToken } from './access';
import type { Principal, RegistryStore } from './model';

/**
 * Client operation lists (docs/registry.md, "Client operation lists"): a client team pushes the
 * GraphQL operations one version of its app sends, each validated against the current API schema
 * as the gateway would run it; a check then refuses a breaking change any of them uses
 * (`registeredUsage`, evaluate.ts) until that version is retired or the change acknowledged.
 */

/** A push as the HTTP layer parsed it (its shape and sizes checked there). */
export interface OperationManifest {
  client: string;
  version: string;
  operations: readonly { id: string; body: string; name?: string }[];
}

/** One operation as stored: its name ('' when anonymous) and the coordinates it uses (at push time). */
export interface StoredOperation {
  id: string;
  name: string;
  body: string;
  coordinates: string[];
}

/** One client version's list (`GET /v1/operations`). */
export interface ClientVersionSummary {
  client: string;
  version: string;
  operations: number;
  pushedAt: string;
  pushedBy: string;
  retiredAt: string | null;
}

/** An operation of an active (not retired) client version using one of the paths asked about. */
export interface RegisteredUse {
  client: string;
  version: string;
  id: string;
  name: string;
  pushedAt: string;
  coordinates: string[];
}

/** One operation of the gateways' feed (`GET /v1/operations/active`), as @halo/contracts/wire declares it. */
export type ActiveOperation = wire.ActiveOperation;

/** The gateways' feed as sent: its JSON text and that text's strong ETag. */
export interface ActiveFeed {
  json: string;
  etag: string;
}

/** What a push changed against the version's list before it. */
export interface ListDiff {
  added: number;
  removed: number;
}

/** What the domain needs from storage for client operation lists (db/client-operations.ts). */
export interface ClientOperationStore {
  /**
   * In one transaction holding the version's row: null when the version is retired (nothing
   * written); else the list before (empty for a new version) goes to `diff`, and unless nothing
   * changed the version's list becomes `operations`, pushed by `pushedBy` now.
   */
  replace(
    client: string,
    version: string,
    pushedBy: string,
    operations: readonly StoredOperation[],
    diff: (before: readonly StoredOperation[]) => ListDiff,
  ): Promise<ListDiff | null>;
  /** Every version's list, of one client or all, by client then newest push first. */
  versions(client: string | undefined): Promise<ClientVersionSummary[]>;
  version(client: string, version: string): Promise<ClientVersionSummary | null>;
  /** A version's operations by name, then id. */
  operations(client: string, version: string): Promise<{ id: string; name: string; body: string }[]>;
  /** Retires a version once (by `by`, now); its retirement time, the first one when it already was; null when unknown. */
  retire(client: string, version: string, by: string): Promise<string | null>;
  /** Every operation of every active (not retired) version, by client, version, id (byte order). */
  active(): Promise<ActiveOperation[]>;
  /** Operations of active versions, but those of `excludeClients`, using any of `paths` (at or under). */
  activeUsing(paths: readonly string[], excludeClients: readonly string[]): Promise<RegisteredUse[]>;
}

/** A pushed list replaced the previous one (201), or was the same (200 `unchanged`). */
export interface PushOutcome extends ListDiff {
  client: string;
  version: string;
  operations: number;
  unchanged: boolean;
}

/** One operation a push refused, and why (the whole push then stores nothing). */
export interface Refusal {
  id: string;
  name: string;
  reason: string;
}

const SHA256_HEX = /^[0-9a-fA-F]{64}$/;
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const same = (a: StoredOperation, b: StoredOperation) => a.name === b.name && a.body === b.body;

/**
 * added: the operations pushed that the list did not hold as they are (a new id, or an id whose
 * name or body changed); removed: those it held that the push does not.
 */
export function diffLists(before: readonly StoredOperation[], after: readonly StoredOperation[]): ListDiff {
  const had = new Map(before.map((o) => [o.id, o]));
  const has = new Map(after.map((o) => [o.id, o]));
  const kept = (o: StoredOperation, other: Map<string, StoredOperation>) => {
    const match = other.get(o.id);
    return match !== undefined && same(o, match);
  };
  return { added: after.filter((o) => !kept(o, had)).length, removed: before.filter((o) => !kept(o, has)).length };
}

/** What a pushed operation is validated against: the latest composition's API schema and its supergraph's cost directives. */
interface Judge {
  hash: string;
  schema: ReturnType<typeof apiSchemaOf>;
  costDirectives: CostDirectives;
}

export interface ClientOperationsOptions {
  /** The largest estimated cost of an operation (OPERATIONS_MAX_COST; default the gateway's `GRAPHQL_MAX_COST` default). */
  maxCost?: number;
}

/** The rules of client operation lists; storage is the store's `clientOperations`. */
export class ClientOperations {
  /** The latest composition's API schema and cost directives, each built once per composition. */
  private judge: Judge | null = null;

  constructor(
    private readonly store: RegistryStore,
    private readonly options: ClientOperationsOptions = {},
  ) {}

  /**
   * Replaces a client version's list with `manifest`'s, after every operation passed (else 400
   * naming each refused one, and nothing stored); 409 when the version is retired.
   */
  async push(principal: Principal, manifest: OperationManifest): Promise<PushOutcome> {
    const { client, version } = manifest;
    authorizeOperationsWriter(principal, client);
    await spendWriteToken(this.store, principal);
    if ((await this.store.clientOperations.version(client, version))?.retiredAt) throw retired(client, version);
    const { schema, costDirectives } = await this.currentJudge();
    const refused: Refusal[] = [];
    const accepted: StoredOperation[] = [];
    const seen = new Set<string>();
    for (const op of manifest.operations) {
      const checked = checkOperation(schema, op.body, { costDirectives, maxCost: this.options.maxCost });
      const name = op.name ?? checked.name;
      const reason = refusalOf(op, seen) ?? (checked.ok ? null : checked.reason);
      if (reason !== null) refused.push({ id: op.id, name, reason });
      else if (checked.ok) accepted.push({ id: op.id, name, body: op.body, coordinates: checked.coordinates });
      seen.add(op.id);
    }
    const m = manifest.operations.length;
    if (refused.length > 0)
      throw badRequest(`${refused.length} of ${m} operations refused`, { refused } satisfies Omit<wire.PushRefusedAnswer, 'error'>);
    const diff = await this.store.clientOperations.replace(client, version, authorOf(principal), accepted, (before) =>
      diffLists(before, accepted),
    );
    if (!diff) throw retired(client, version);
    return { client, version, operations: m, ...diff, unchanged: diff.added === 0 && diff.removed === 0 };
  }

  /** Retires a version: it no longer blocks checks and takes no pushes. Idempotent (the first time stays). */
  async retire(principal: Principal, client: string, version: string): Promise<{ client: string; version: string; retiredAt: string }> {
    authorizeOperationsWriter(principal, client);
    await spendWriteToken(this.store, principal);
    const retiredAt = await this.store.clientOperations.retire(client, version, authorOf(principal));
    if (retiredAt === null) throw notRegistered(client, version);
    return { client, version, retiredAt };
  }

  /** Every client version's list (of one client), by client, newest push first. */
  list(client?: string): Promise<ClientVersionSummary[]> {
    return this.store.clientOperations.versions(client);
  }

  /** One version's list whole; 404 when none was pushed. */
  async get(client: string, version: string) {
    const found = await this.store.clientOperations.version(client, version);
    if (!found) throw notRegistered(client, version);
    const { operations: _n, ...rest } = found;
    return { ...rest, operations: await this.store.clientOperations.operations(client, version) };
  }

  /**
   * What gateways poll (`GET /v1/operations/active`) to enforce or audit registered operations:
   * `{operations: [{id, body, client, version}]}`, every operation of every active version by
   * client, version, id, as the JSON text sent, and its strong ETag (the quoted hex sha256 of that
   * text), so a poll naming it is answered 304 and any push or retirement that changes the feed
   * changes it.
   */
  async active(): Promise<ActiveFeed> {
    const rows = await this.store.clientOperations.active();
    const feed = {
      operations: rows.map((o) => ({ id: o.id, body: o.body, client: o.client, version: o.version })),
    } satisfies wire.ActiveOperationsAnswer;
    const json = JSON.stringify(feed);
    return { json, etag: `"${sha256(json)}"` };
  }

  /**
   * The latest composition's API schema (what gateways validate against) and its supergraph's
   * `@cost`/`@listSize` (what they estimate cost from; the API schema drops them).
   */
  private async currentJudge(): Promise<Judge> {
    const head = await this.store.latestHead();
    if (!head) throw conflict('Nothing composed yet: operations are validated against the current composition');
    if (this.judge?.hash !== head.hash) {
      const composition = await this.store.composition(head.composition);
      if (!composition) throw conflict('Nothing composed yet: operations are validated against the current composition');
      const { supergraph } = composition;
      this.judge = { hash: head.hash, schema: apiSchemaOf(supergraph), costDirectives: costDirectivesOf(supergraph) };
    }
    return this.judge;
  }
}

/** What refuses an operation whatever its document: an id pushed twice, a sha256 id that is not its body's. */
function refusalOf(op: { id: string; body: string }, seen: ReadonlySet<string>): string | null {
  if (seen.has(op.id)) return 'the same id is pushed twice';
  if (SHA256_HEX.test(op.id) && op.id.toLowerCase() !== sha256(op.body)) return 'id is not the sha256 of its body';
  return null;
}

const retired = (client: string, version: string) => conflict(`${client} ${version} is retired`);
const notRegistered = (client: string, version: string) => notFound(`No operations registered for ${client} ${version}`);

/**
 * The registered operations of active client versions that use any of `paths`, as usage entries
 * (count 0, `lastSeen` the push, flagged `registered`), so a check matches them to its changes
 * (`usageOf`) beside the operations gateways counted.
 */
export async function registeredUsage(
  store: RegistryStore,
  paths: readonly string[],
  excludeClients: readonly string[],
): Promise<OperationUsage[]> {
  if (paths.length === 0) return [];
  return (await store.clientOperations.activeUsing(paths, excludeClients)).map((u) => ({
    name: u.name,
    hash: u.id,
    client: u.client,
    clientVersion: u.version,
    count: 0,
    lastSeen: u.pushedAt,
    coordinates: u.coordinates,
    registered: true,
  }));
}

/** A check's note for a breaking change registered operations use: up to five, `Name (client version)`. */
export function registeredNote(
  path: string,
  operations: readonly { name: string; hash: string; client: string; clientVersion: string | null }[],
) {
  const named = operations.slice(0, 5).map((o) => `${o.name || o.hash} (${o.client} ${o.clientVersion ?? ''})`);
  const more = operations.length > 5 ? ` and ${operations.length - 5} more` : '';
  return `${path}: breaking and used by registered operations: ${named.join(', ')}${more}`;
}
