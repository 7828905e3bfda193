import type { Logger } from '@halo/kit/logging';
import { ActiveOperationsAnswer, type ActiveOperation } from '@halo/contracts/wire';
import { GraphQLError } from 'graphql';
import { LRUCache } from 'lru-cache';
import { clientCache, UNKNOWN_CLIENT, type UsageClient } from '../usage';
import { sha256, type TrustedDocuments } from './persisted';
import type { OperationRequest } from './request-checks';

/**
 * Registered operations (docs/registry.md "Client operation lists"): the operations client apps
 * pushed to the registry, per client name and version, polled by the gateway from `GET
 * /v1/operations/active`, plus the trusted documents file (GRAPHQL_TRUSTED_DOCUMENTS) as a list
 * every client shares. With `PERSISTED_OPERATIONS`:
 * - `off`: nothing here runs (automatic persisted queries work as they always did);
 * - `audit`: every operation runs; one that is not registered for its client is counted and logged;
 * - `enforce`: one that is not registered for its client is refused (400) before anything runs,
 *   unless the client is allowed free-form operations (`PERSISTED_OPERATIONS_ALLOW_CLIENTS`).
 * In `audit` and `enforce` a registered operation may be sent by its id alone — the APQ extension
 * (`extensions.persistedQuery.sha256Hash`) or a `documentId` / `doc_id` field — and its text is
 * taken from the list, so it costs no store lookup.
 *
 * "Registered for its client": held by any active (not retired) version of the client named by
 * the request's `apollographql-client-name` (or `x-client-name`), or by the shared file. Versions
 * are the client's word like names; an operation does not belong to one app version only, since
 * two releases of an app commonly share most of their operations.
 */

export const PERSISTED_MODES = ['off', 'audit', 'enforce'] as const;
export type PersistedMode = (typeof PERSISTED_MODES)[number];

/** One operation of the registry's feed (`GET /v1/operations/active`). */
export type { ActiveOperation };

/** An operation request as clients send it, with the ids a persisted-documents client may send. */
export interface IdentifiedOperation extends OperationRequest {
  documentId?: unknown;
  doc_id?: unknown;
}

/** What a request's operation becomes: the operation to run (its text taken from a list when sent by id), or its refusal. */
export type Resolution = { op: IdentifiedOperation; registered: boolean } | { refused: GraphQLError };

/** Labels of the operations counter: the client and version as listed, `other` for any the lists do not hold. */
export interface RegisteredLabels {
  client: string;
  version: string;
  registered: 'true' | 'false';
}

/** How long an unregistered (client, version, operation) is not logged again in `audit`. */
const AUDIT_LOG_EVERY_MS = 10 * 60_000;

/** `GET /v1/operations/active`'s answer; throws when it is not one (the poller keeps the last good lists). */
export function parseActiveOperations(json: unknown): ActiveOperation[] {
  const result = ActiveOperationsAnswer.safeParse(json);
  if (result.success) return result.data.operations;
  const [member, index] = result.error.issues[0]?.path ?? [];
  if (member !== 'operations' || typeof index !== 'number') throw new Error('no operations array');
  throw new Error(`operations[${index}] is not {id, body, client, version}`);
}

interface ClientList {
  operations: Map<string, string>;
  versions: Set<string>;
}

export interface RegisteredOperationsOptions {
  mode: PersistedMode;
  /** Clients that may still send operations no list holds in `enforce` (an internal admin tool). */
  allowClients: readonly string[];
  /** The trusted documents file: operations every client may send. */
  shared?: TrustedDocuments;
  logger: Logger;
  /** Called once per operation judged (metrics). */
  count?: (labels: RegisteredLabels) => void;
}

export class RegisteredOperations {
  readonly mode: PersistedMode;
  private lists = new Map<string, ClientList>();
  private readonly shared: TrustedDocuments;
  private readonly allow: ReadonlySet<string>;
  private readonly logged = new LRUCache<string, true>({ max: 1000, ttl: AUDIT_LOG_EVERY_MS });
  private readonly clients = clientCache();
  private readonly log: Logger;

  constructor(private readonly opts: RegisteredOperationsOptions) {
    this.mode = opts.mode;
    this.shared = opts.shared ?? new Map();
    this.allow = new Set(opts.allowClients);
    this.log = opts.logger.child({ component: 'registered-operations' });
  }

  /** The lists from the registry's feed, swapped in whole. */
  replace(feed: readonly ActiveOperation[]): void {
    const lists = new Map<string, ClientList>();
    for (const op of feed) {
      let list = lists.get(op.client);
      if (!list) lists.set(op.client, (list = { operations: new Map(), versions: new Set() }));
      // By the id the client's tooling gave it (Relay's, a manifest's) and by the SHA-256 of its text
      // (what APQ links send, and how an operation sent in full is recognised).
      list.operations.set(op.id, op.body);
      list.operations.set(sha256(op.body), op.body);
      list.versions.add(op.version);
    }
    this.lists = lists;
    this.log.info({ clients: lists.size, operations: feed.length }, 'operation lists loaded');
  }

  /** Operations held: the registry's (every client's, once per client) and the shared file's. */
  get size(): { registry: number; shared: number } {
    let registry = 0;
    for (const list of this.lists.values()) registry += new Set(list.operations.values()).size;
    return { registry, shared: this.shared.size };
  }

  /** The client a request names by its headers (`read` gives a header's value), bounded as usage records it. */
  clientOf(read: (name: string) => unknown): UsageClient {
    const s = (name: string) => {
      const v = read(name);
      return typeof v === 'string' ? v : undefined;
    };
    return this.clients(s('apollographql-client-name'), s('x-client-name'), s('apollographql-client-version'), s('x-client-version'));
  }

  /**
   * One operation as sent, for `client`: sent by a registered id, its text from the list (the
   * ids removed, so nothing downstream looks them up again); sent in full, judged by its hash.
   * Only `enforce` refuses; the errors are HTTP 400 on every transport.
   */
  resolve(op: IdentifiedOperation, client: UsageClient): Resolution {
    const docId = typeof op.documentId === 'string' ? op.documentId : typeof op.doc_id === 'string' ? op.doc_id : undefined;
    const persisted = (op.extensions as { persistedQuery?: { sha256Hash?: unknown } } | null | undefined)?.persistedQuery;
    const apqHash = typeof persisted?.sha256Hash === 'string' ? persisted.sha256Hash : undefined;
    const query = typeof op.query === 'string' && op.query !== '' ? op.query : undefined;
    const id = docId !== undefined ? idOf(docId) : apqHash;
    const listed = id === undefined ? undefined : this.lookup(client.name, id);
    if (listed !== undefined) {
      // A hash sent with its text was checked already (request-checks.ts); an id is checked here.
      if (query !== undefined && query !== listed) return { refused: mismatch() };
      this.counted(client, true);
      return { op: { ...withoutIds(op), query: listed }, registered: true };
    }
    if (query === undefined) {
      if (id === undefined) return { op, registered: false };
      this.counted(client, false);
      // An unknown APQ hash is Apollo's store's to look up, unless only lists may answer.
      if (docId === undefined && !this.enforced(client)) return { op, registered: false };
      return { refused: notRegistered(client, 'PERSISTED_QUERY_NOT_FOUND') };
    }
    const hash = sha256(query);
    // An id no list holds, sent with a text: the text is judged, as if sent alone.
    const registered = this.lookup(client.name, hash) !== undefined;
    this.counted(client, registered);
    if (!registered) {
      if (this.enforced(client)) return { refused: notRegistered(client, 'PERSISTED_QUERY_NOT_IN_LIST') };
      if (this.mode === 'audit') this.audit(client, hash, op.operationName);
    }
    return { op: docId === undefined ? op : withoutIds(op), registered };
  }

  private lookup(client: string, id: string): string | undefined {
    return this.shared.get(id) ?? this.lists.get(client)?.operations.get(id);
  }

  private enforced(client: UsageClient): boolean {
    return this.mode === 'enforce' && !this.allow.has(client.name);
  }

  private counted(client: UsageClient, registered: boolean): void {
    if (!this.opts.count) return;
    const list = this.lists.get(client.name);
    const known = list !== undefined || this.allow.has(client.name);
    this.opts.count({
      client: known ? client.name : 'other',
      version: list?.versions.has(client.version) ? client.version : client.version === '' ? 'none' : 'other',
      registered: registered ? 'true' : 'false',
    });
  }

  /** An unregistered operation served in `audit`: logged once per client, version and operation every ten minutes. */
  private audit(client: UsageClient, hash: string, operationName: unknown): void {
    const key = `${client.name}\n${client.version}\n${hash}`;
    if (this.logged.has(key)) return;
    this.logged.set(key, true);
    this.log.warn(
      {
        client: client.name,
        version: client.version,
        hash,
        operationName: typeof operationName === 'string' ? operationName.slice(0, 100) : undefined,
      },
      'operation not registered for its client (PERSISTED_OPERATIONS=audit: served)',
    );
  }
}

/**
 * A document id as clients send it: the id the operation was pushed with (Relay's, a manifest's)
 * or the SHA-256 of its text, which some tools prefix with `sha256:`.
 */
const idOf = (id: string) => (id.startsWith('sha256:') ? id.slice('sha256:'.length) : id);

/** The operation without the ids it was sent by: its text is what runs now. */
function withoutIds(op: IdentifiedOperation): IdentifiedOperation {
  const { documentId: _documentId, doc_id: _docId, extensions, ...rest } = op;
  if (extensions === undefined || extensions === null || typeof extensions !== 'object') return rest;
  const { persistedQuery: _persisted, ...others } = extensions as Record<string, unknown>;
  return Object.keys(others).length === 0 ? rest : { ...rest, extensions: others };
}

const mismatch = () =>
  new GraphQLError('provided sha does not match query', { extensions: { code: 'PERSISTED_QUERY_HASH_MISMATCH', http: { status: 400 } } });

/** The refusal in `enforce`, naming the client as the gateway read it (its name is sanitized: `[A-Za-z0-9._/@-]`). */
function notRegistered(client: UsageClient, code: 'PERSISTED_QUERY_NOT_FOUND' | 'PERSISTED_QUERY_NOT_IN_LIST'): GraphQLError {
  const who =
    client.name === UNKNOWN_CLIENT
      ? 'this client (it sent no apollographql-client-name)'
      : `client "${client.name}"${client.version ? ` (version ${client.version})` : ''}`;
  return new GraphQLError(`Operation not registered for ${who}`, { extensions: { code, http: { status: 400 } } });
}
