import type { ChangeUsage, Composition, Contract, OperationUsage, wire } from '@halo/contracts';
import type { ClientOperationStore } from './client-operations';

/** Who is calling (docs/registry.md, "Authentication"). */
export type Principal =
  /** A service's own token: it may publish and roll back only its own contract. */
  | { kind: 'service'; name: string; token: SpendableToken }
  /**
   * An admin's API key with scope `schema:write` (every service: `services` null),
   * `schema:write:<service>` (those services only: a team's CI key), or only `schema:read`
   * (`services` empty: a reader, who may read the registry and its Studio but write nothing).
   * Every admin principal reads; `services` says what it may write. `clients` likewise says whose
   * operation lists it may push and retire: `operations:write` every client's (null),
   * `operations:write:<client>` those clients', none (`[]`) without either.
   */
  | { kind: 'admin'; id: string; name: string; services: readonly string[] | null; clients: readonly string[] | null }
  /**
   * HALO_ENV=development only: a token signed with the developer key `npm start` makes and hands
   * to `npm run subgraph` (any service, as an admin's `schema:write` key).
   */
  | { kind: 'developer'; token: SpendableToken }
  /** HALO_ENV=development only, no credentials, from a loopback address: reads and checks, never a write. */
  | { kind: 'anonymous' };

/** A signed token's id and expiry: a write spends it (single use). */
export interface SpendableToken {
  jti: string;
  /** Seconds since the epoch. */
  exp: number;
}

/** One change a version made, as its check reported it at publish. */
export interface RecordedChange {
  type: string;
  path: string;
  message: string;
  breaking: boolean;
  acknowledged: boolean;
}

export interface VersionRecord {
  service: string;
  version: number;
  hash: string;
  url: string;
  contract: Contract;
  author: string;
  createdAt: string;
  /** What it changed against the composition it replaced; null for the bootstrap and versions recorded before history. */
  changes?: RecordedChange[] | null;
  /** The reason it was published with, when it let breaking changes through. */
  acknowledgement?: string | null;
  /** A rollback: the version whose contract it republished. */
  rollbackOf?: number | null;
}

export interface CompositionRecord extends Composition {
  composition: number;
  hash: string;
  /** The version of each service composed. */
  services: Record<string, number>;
  author: string;
  createdAt: string;
}

export interface Acknowledgement {
  service: string;
  version: number | null;
  type: string;
  path: string;
  message: string;
  reason: string;
  author: string;
}

/** One line of a gateway's usage report (`POST /v1/usage`), as @halo/contracts/wire declares it. */
export type UsageReport = wire.UsageReport;

/** The check report (docs/registry.md, "Check report"). */
export interface CheckReport {
  ok: boolean;
  service: string;
  composition: { ok: boolean; errors: string[] };
  rest: { ok: boolean; errors: string[] };
  changes: {
    type: string;
    path: string;
    message: string;
    breaking: boolean;
    acknowledged: boolean;
    usage: ChangeUsage;
  }[];
  notes: string[];
  /** The options this check ran with (the request's, else the registry's defaults). */
  options: CheckOptions;
}

/**
 * How usage decides a breaking change (as `rover subgraph check` and Hive take them): the window
 * in days, the share of all requests in it above which a use blocks (0: any use blocks), and
 * clients whose usage does not count.
 */
export interface CheckOptions {
  windowDays: number;
  thresholdPercent: number;
  excludeClients: string[];
}

/** What was asked: a check (`POST /v1/check`), a publish or a rollback. */
export type CheckKind = 'check' | 'publish' | 'rollback';
/**
 * What came of it: a check that found nothing blocking `passed`; a publish or rollback
 * `published` a version, or was `unchanged` (the contract already current); any of them
 * `refused` (it does not compose, or breaks what clients use without an acknowledgement).
 */
export type CheckOutcome = 'passed' | 'published' | 'unchanged' | 'refused';

/** One check as it is recorded (table `checks`). */
export interface NewCheck {
  service: string;
  kind: CheckKind;
  /** As `authorOf` records it. */
  author: string;
  ok: boolean;
  outcome: CheckOutcome;
  /** The report as it was answered. */
  report: CheckReport;
  /** The reason the request gave to let breaking changes through, if any. */
  acknowledgement: string | null;
  /** The version a publish or rollback made (unchanged: the one that stayed current); null for a check or a refusal. */
  version: number | null;
}

export interface CheckRecord extends NewCheck {
  id: number;
  createdAt: string;
}

/** One entry of `GET /v1/checks` (`Registry.checks`): the check and what its report found. */
export interface CheckSummary {
  id: number;
  service: string;
  kind: CheckKind;
  author: string;
  ok: boolean;
  outcome: CheckOutcome;
  version: number | null;
  acknowledgement: string | null;
  createdAt: string;
  /** Each change with its usage (the operations, clients and versions that block it). */
  changes: CheckReport['changes'];
  notes: string[];
  errors: { composition: string[]; rest: string[] };
}

/** One check whole (`GET /v1/checks/:id`, `Registry.checkById`): its summary and the report as answered. */
export interface CheckDetail extends CheckSummary {
  report: CheckReport;
}

/** Requests per schema coordinate in a window (`GET /v1/usage/coordinates`, `Registry.usageByCoordinate`). */
export interface CoordinateUsage {
  /** The window's start. */
  since: string;
  /** Busiest first. */
  coordinates: CoordinateCount[];
}

export interface CoordinateCount {
  coordinate: string;
  /** Requests of operations that recorded it. */
  count: number;
  /** Distinct client names among them. */
  clients: number;
}

/** One operation of one client version, counted over a window (as a check report names them). */
export type OperationCount = Omit<OperationUsage, 'coordinates'>;

/** One coordinate's requests per hour by client (`GET /v1/usage/series`, `Registry.usageSeries`). */
export interface UsageSeries {
  coordinate: string;
  since: string;
  /** Every hour of the window, oldest first (ISO, on the hour). */
  hours: string[];
  /** One per client version, busiest first; `counts[i]` is the requests in `hours[i]`, 0 when none. */
  series: { client: string; clientVersion: string | null; counts: number[] }[];
  /** The operations that used it, busiest first. */
  operations: OperationCount[];
}

/** How `GET /v1/usage/operations` orders: by requests, by estimated cost per request, or by estimated cost in all. */
export const OPERATION_ORDERS = ['requests', 'cost', 'totalCost'] as const;
export type OperationOrder = (typeof OPERATION_ORDERS)[number];

/** One of the top operations of a window (`GET /v1/usage/operations`, `Registry.topOperations`). */
export interface TopOperation {
  name: string;
  hash: string;
  body: string;
  /** The client names that sent it, busiest first. */
  clients: string[];
  count: number;
  /**
   * Its estimated cost (the gateways' cost analysis, with each request's variables): the mean per
   * request, and that mean times its requests; null when no gateway reported a cost for it.
   */
  cost: { perRequest: number; total: number } | null;
  lastSeen: string;
  /** How many schema coordinates it uses. */
  coordinates: number;
}

/** One client version's requests in a window (`GET /v1/usage/clients`, `Registry.usageClients`); `clientVersion` null: it declared none. */
export interface ClientUsage {
  client: string;
  clientVersion: string | null;
  count: number;
  lastSeen: string;
}

/** A coordinate's requests in one hour from one client version (what a series is filled from). */
export interface HourCount {
  hour: string;
  client: string;
  clientVersion: string | null;
  count: number;
}

/** What the domain needs from storage; `locked` runs `fn` in one transaction holding the composition lock. */
export interface RegistryStore {
  locked<T>(fn: (tx: RegistryStore) => Promise<T>): Promise<T>;
  latestHead(): Promise<{ composition: number; hash: string } | null>;
  composition(n: number): Promise<CompositionRecord | null>;
  /** The versions the latest composition holds. */
  currentVersions(): Promise<VersionRecord[]>;
  /** A service's versions, newest first. */
  versions(service: string): Promise<VersionRecord[]>;
  /** One version of a service, or null. */
  version(service: string, version: number): Promise<VersionRecord | null>;
  insertVersion(v: Omit<VersionRecord, 'version' | 'createdAt'>): Promise<number>;
  insertComposition(c: Omit<CompositionRecord, 'composition' | 'createdAt'>): Promise<number>;
  insertAcknowledgements(acks: readonly Acknowledgement[]): Promise<void>;
  /** Usage since `since` of operations recording any coordinate at or under one of `paths`. */
  usageOf(paths: readonly string[], since: Date, excludeClients: readonly string[]): Promise<OperationUsage[]>;
  /** Every request counted since `since`, but those of `excludeClients` (what a threshold is a share of). */
  requestsSince(since: Date, excludeClients: readonly string[]): Promise<number>;
  addUsage(reports: readonly UsageReport[]): Promise<void>;
  pruneUsage(before: Date): Promise<number>;
  /** Records a check, publish or rollback; its id. */
  insertCheck(c: NewCheck): Promise<number>;
  /** The latest checks, newest first, of one service or of all. */
  checks(service: string | undefined, limit: number): Promise<CheckRecord[]>;
  checkById(id: number): Promise<CheckRecord | null>;
  pruneChecks(before: Date): Promise<number>;
  /** Requests since `since` per coordinate recorded, busiest first. */
  coordinateCounts(since: Date): Promise<CoordinateCount[]>;
  /** Requests since `since` of operations that recorded `coordinate`, per hour and client version. */
  coordinateHours(coordinate: string, since: Date): Promise<HourCount[]>;
  /** The operations (per client version) that recorded `coordinate` since `since`, busiest first. */
  coordinateOperations(coordinate: string, since: Date): Promise<OperationCount[]>;
  /** The `limit` busiest operations since `since`. */
  topOperations(since: Date, limit: number, order: OperationOrder): Promise<TopOperation[]>;
  /** Requests since `since` per client version, busiest first. */
  clientCounts(since: Date): Promise<ClientUsage[]>;
  sawGateway(id: string, composition: number | null): Promise<void>;
  gateways(): Promise<{ id: string; composition: number | null; lastSeen: string }[]>;
  /** Remembers a token as spent until it expires; false when it already was. */
  spendToken(jti: string, expiresAt: Date): Promise<boolean>;
  /** Client apps' operation lists (tables `client_versions`, `client_operations`). */
  readonly clientOperations: ClientOperationStore;
}
