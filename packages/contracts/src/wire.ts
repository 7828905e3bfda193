import { z } from 'zod';

/**
 * The registry's wire contract (docs/registry.md, "Registry HTTP API"), declared once: what its
 * routes send (services/registry/src/rest/, typed with these), what the gateway polls (parsed with
 * these) and what the CLIs read (tools/src/subgraph.ts, tools/src/operations.ts). A light entry
 * (`@halo/contracts/wire`): it imports zod alone, so the gateway loads no composition code.
 *
 * Each schema and its inferred type share a name. Answers are zod's default objects (unknown
 * members dropped), so a registry may add members without breaking an older reader. Requests
 * (`…Request`) say what a client sends: the registry's REST manifest
 * (services/registry/src/rest/manifest.ts) checks them, strict where the registry refuses an
 * unknown member, with its own wording (docs/registry.md).
 */

/** A JSON object (not null), whose contents another layer reads. */
const jsonObject = z.custom<object>((v) => v !== null && typeof v === 'object', 'not an object');

/** A 4xx or 5xx answer: `{error}` and what the route adds (a check's report, a push's refusals). */
export const ErrorAnswer = z.object({ error: z.string() });
export type ErrorAnswer = z.infer<typeof ErrorAnswer>;

// --- What gateways poll ----------------------------------------------------------------------

/**
 * `GET /v1/supergraph`: the latest composition. Its contents (supergraph, route table, OpenAPI
 * document) are checked by the gateway as it accepts them; `createdAt` and `services` only
 * inform its logs, so an answer without them is read as '' and {}.
 */
export const SupergraphAnswer = z.object({
  composition: z.number().int(),
  hash: z.string().min(1, 'missing'),
  createdAt: z.string().catch(''),
  supergraph: z.string(),
  routes: jsonObject,
  openapi: jsonObject,
  /** The version of each service composed. */
  services: z.record(z.string(), z.number()).catch({}),
});
export type SupergraphAnswer = z.infer<typeof SupergraphAnswer>;

/** One operation of `GET /v1/operations/active`: an active client version's, by its id. */
export const ActiveOperation = z.object({ id: z.string().min(1), body: z.string(), client: z.string(), version: z.string() });
export type ActiveOperation = z.infer<typeof ActiveOperation>;

/** `GET /v1/operations/active`: every operation of every active (not retired) client version. */
export const ActiveOperationsAnswer = z.object({ operations: z.array(ActiveOperation) });
export type ActiveOperationsAnswer = z.infer<typeof ActiveOperationsAnswer>;

/** A gateway polling the registry (`GET /v1/gateways`): the composition it served when last seen. */
export const GatewaysAnswer = z.object({
  gateways: z.array(z.object({ id: z.string(), composition: z.number().nullable(), lastSeen: z.string() })),
});
export type GatewaysAnswer = z.infer<typeof GatewaysAnswer>;

/**
 * One line of `POST /v1/usage` `reports`: a gateway's count of one operation of one client (and
 * version) in one hour, with the schema coordinates it uses and, when the gateway estimates cost,
 * the estimate summed over `cost.requests` of the `count` requests.
 */
export const UsageReport = z
  .strictObject({
    /** The hour's start, ISO 8601. */
    hour: z.iso.datetime({ offset: true }),
    /** The client's name (`unknown` when it gave none). */
    client: z.string().max(64),
    /** Absent when unknown. */
    clientVersion: z.string().max(64).optional(),
    operation: z.strictObject({ hash: z.string().min(1).max(128), name: z.string().max(200), body: z.string().max(100_000) }),
    coordinates: z.array(z.string().min(1).max(300)).max(5_000),
    count: z.number().int().min(0).max(1e12),
    cost: z.strictObject({ sum: z.number().min(0).max(1e18), requests: z.number().int().min(0).max(1e12) }).optional(),
  })
  .refine((r) => r.cost === undefined || r.cost.requests <= r.count, { path: ['cost', 'requests'] });
export type UsageReport = z.infer<typeof UsageReport>;

/** `POST /v1/usage`: what a gateway counted since its last report (the gateway's service token only). */
export const UsageRequest = z.strictObject({
  /** Which gateway, and the composition it serves. */
  gateway: z.strictObject({ id: z.string().min(1).max(200), composition: z.number().int().positive().nullable() }),
  reports: z.array(UsageReport).max(10_000),
});
export type UsageRequest = z.infer<typeof UsageRequest>;

/** `POST /v1/usage` (202): how many report lines were taken. */
export const UsageAnswer = z.object({ accepted: z.number() });
export type UsageAnswer = z.infer<typeof UsageAnswer>;

// --- Checks and publishes (`npm run subgraph`) -----------------------------------------------

/** A service's contract as sent to check, publish (and read back): its GraphQL schema (null without one) and its REST part. */
export const WireContract = z.object({ service: z.string(), url: z.string(), sdl: z.string().nullable(), rest: z.unknown() });
export type WireContract = z.infer<typeof WireContract>;

/**
 * How usage decides a breaking change, for one check, publish or rollback; each absent option is
 * the registry's default (docs/registry.md, "Check options").
 */
export const CheckOptionsRequest = z.strictObject({
  /** Usage in this many days counts: 1 to the usage the registry keeps (REGISTRY_USAGE_RETENTION_DAYS). */
  windowDays: z.number().int().min(1).optional(),
  /** A breaking change used by at most this share of the window's requests passes (0: any use blocks). */
  thresholdPercent: z.number().min(0).max(100).optional(),
  /** Clients whose usage never blocks. */
  excludeClients: z.array(z.string().min(1).max(64)).max(50).optional(),
});
export type CheckOptionsRequest = z.infer<typeof CheckOptionsRequest>;

/** Why breaking changes may go through (recorded with the version). */
const Acknowledge = z.string().min(1).max(1000).nullable().optional();

/** `POST /v1/check` and `POST /v1/publish`: a contract, with options and, to let breaking changes through, a reason. */
export const CheckRequest = z.object({
  contract: WireContract,
  options: CheckOptionsRequest.nullable().optional(),
  acknowledge: Acknowledge,
});
export type CheckRequest = z.infer<typeof CheckRequest>;
export const PublishRequest = CheckRequest;
export type PublishRequest = CheckRequest;

/** `POST /v1/rollback`: republish version `to` of `service`, after the same checks as a publish. */
export const RollbackRequest = z.object({
  service: z.string().min(1),
  to: z.number().int().min(1),
  options: CheckOptionsRequest.nullable().optional(),
  acknowledge: Acknowledge,
});
export type RollbackRequest = z.infer<typeof RollbackRequest>;

/** An operation whose usage a change affects: one a gateway counted, or one a client registered (`registered`). */
export const OperationUse = z.object({
  name: z.string(),
  hash: z.string(),
  client: z.string(),
  clientVersion: z.string().nullable(),
  count: z.number(),
  lastSeen: z.string(),
  registered: z.literal(true).optional(),
});
export type OperationUse = z.infer<typeof OperationUse>;

/** The check report (docs/registry.md, "Check report"). */
export const CheckReport = z.object({
  ok: z.boolean(),
  service: z.string(),
  composition: z.object({ ok: z.boolean(), errors: z.array(z.string()) }),
  rest: z.object({ ok: z.boolean(), errors: z.array(z.string()) }),
  changes: z.array(
    z.object({
      type: z.string(),
      path: z.string(),
      message: z.string(),
      breaking: z.boolean(),
      acknowledged: z.boolean(),
      usage: z.object({ count: z.number(), operations: z.array(OperationUse) }),
    }),
  ),
  notes: z.array(z.string()),
  /** The options the check ran with (the request's, else the registry's defaults). */
  options: z.object({ windowDays: z.number(), thresholdPercent: z.number(), excludeClients: z.array(z.string()) }),
});
export type CheckReport = z.infer<typeof CheckReport>;

/** `POST /v1/check` (200). */
export const CheckAnswer = z.object({ ok: z.boolean(), report: CheckReport });
export type CheckAnswer = z.infer<typeof CheckAnswer>;

/**
 * `POST /v1/publish` and `/v1/rollback`: 201 published, 200 unchanged (its composition null when
 * the registry holds none for it).
 */
export const PublishAnswer = z.union([
  z.object({ version: z.number(), composition: z.number(), report: CheckReport, unchanged: z.undefined().optional() }),
  z.object({ unchanged: z.literal(true), version: z.number(), composition: z.number().nullable(), report: z.undefined().optional() }),
]);
export type PublishAnswer = z.infer<typeof PublishAnswer>;

/** A publish, rollback or check refused (422 `Check failed`, or any 4xx): its report when it has one. */
export const RefusedAnswer = ErrorAnswer.extend({ report: CheckReport.optional() });
export type RefusedAnswer = z.infer<typeof RefusedAnswer>;

// --- History (`npm run subgraph -- list|log|fetch|diff`) --------------------------------------

/** `GET /v1/services`: each service's current version. */
export const ServicesAnswer = z.object({
  services: z.array(
    z.object({ service: z.string(), version: z.number(), url: z.string(), hash: z.string(), author: z.string(), publishedAt: z.string() }),
  ),
});
export type ServicesAnswer = z.infer<typeof ServicesAnswer>;

const Change = z.object({ type: z.string(), path: z.string(), message: z.string(), breaking: z.boolean() });

/** `GET /v1/services/:service/versions`: its history, one entry a version. */
export const VersionsAnswer = z.object({
  versions: z.array(
    z.object({
      version: z.number(),
      hash: z.string(),
      url: z.string(),
      author: z.string(),
      createdAt: z.string(),
      /** What it changed at publish; null for the bootstrap and versions recorded before history. */
      changes: z.array(Change.extend({ acknowledged: z.boolean() })).nullable(),
      acknowledgement: z.string().nullable(),
      rollbackOf: z.number().nullable(),
    }),
  ),
});
export type VersionsAnswer = z.infer<typeof VersionsAnswer>;

/** `GET /v1/services/:service/versions/:version`: one version whole. */
export const VersionAnswer = z.object({
  service: z.string(),
  version: z.number(),
  hash: z.string(),
  url: z.string(),
  author: z.string(),
  createdAt: z.string(),
  rollbackOf: z.number().nullable(),
  contract: WireContract,
});
export type VersionAnswer = z.infer<typeof VersionAnswer>;

/** `GET /v1/services/:service/diff?from&to`: the check's change list between two versions, then their text diff. */
export const DiffAnswer = z.object({
  service: z.string(),
  from: z.number(),
  to: z.number(),
  changes: z.array(Change),
  /** Why the change list is empty although the versions differ: one of them no longer composes. */
  errors: z.array(z.string()),
  text: z.string(),
});
export type DiffAnswer = z.infer<typeof DiffAnswer>;

// --- Checks recorded and usage read (the Studio, any reader) ----------------------------------

const CheckKind = z.enum(['check', 'publish', 'rollback']);
const CheckOutcome = z.enum(['passed', 'published', 'unchanged', 'refused']);

/** One entry of `GET /v1/checks`: a check, publish or rollback as recorded, and what its report found. */
export const CheckSummary = z.object({
  id: z.number(),
  service: z.string(),
  kind: CheckKind,
  author: z.string(),
  ok: z.boolean(),
  outcome: CheckOutcome,
  /** The version a publish or rollback made (unchanged: the one that stayed current). */
  version: z.number().nullable(),
  acknowledgement: z.string().nullable(),
  createdAt: z.string(),
  changes: CheckReport.shape.changes,
  notes: z.array(z.string()),
  errors: z.object({ composition: z.array(z.string()), rest: z.array(z.string()) }),
});
export type CheckSummary = z.infer<typeof CheckSummary>;

/** `GET /v1/checks[?service&limit]`: the latest, newest first. */
export const ChecksAnswer = z.object({ checks: z.array(CheckSummary) });
export type ChecksAnswer = z.infer<typeof ChecksAnswer>;

/** `GET /v1/checks/:id`: one check whole, its report as answered. */
export const CheckDetailAnswer = CheckSummary.extend({ report: CheckReport });
export type CheckDetailAnswer = z.infer<typeof CheckDetailAnswer>;

/** `GET /v1/usage/coordinates[?days]`: requests per schema coordinate since `since`, busiest first. */
export const CoordinateUsageAnswer = z.object({
  since: z.string(),
  coordinates: z.array(z.object({ coordinate: z.string(), count: z.number(), clients: z.number() })),
});
export type CoordinateUsageAnswer = z.infer<typeof CoordinateUsageAnswer>;

/** `GET /v1/usage/series?coordinate[&days]`: one coordinate's requests per hour and client version, and the operations that used it. */
export const UsageSeriesAnswer = z.object({
  coordinate: z.string(),
  since: z.string(),
  /** Every hour of the window, oldest first. */
  hours: z.array(z.string()),
  /** `counts[i]`: the requests in `hours[i]`. */
  series: z.array(z.object({ client: z.string(), clientVersion: z.string().nullable(), counts: z.array(z.number()) })),
  operations: z.array(OperationUse.omit({ registered: true })),
});
export type UsageSeriesAnswer = z.infer<typeof UsageSeriesAnswer>;

/** `GET /v1/usage/operations[?days&limit&by]`: the top operations of the window. */
export const TopOperationsAnswer = z.object({
  operations: z.array(
    z.object({
      name: z.string(),
      hash: z.string(),
      body: z.string(),
      clients: z.array(z.string()),
      count: z.number(),
      /** The estimated cost per request and in all; null when no gateway reported one. */
      cost: z.object({ perRequest: z.number(), total: z.number() }).nullable(),
      lastSeen: z.string(),
      coordinates: z.number(),
    }),
  ),
});
export type TopOperationsAnswer = z.infer<typeof TopOperationsAnswer>;

/** `GET /v1/usage/clients[?days]`: requests per client version, busiest first. */
export const UsageClientsAnswer = z.object({
  clients: z.array(z.object({ client: z.string(), clientVersion: z.string().nullable(), count: z.number(), lastSeen: z.string() })),
});
export type UsageClientsAnswer = z.infer<typeof UsageClientsAnswer>;

// --- Client operation lists (`npm run operations`) --------------------------------------------

/** A client's name as gateways record it: `web`, `@halo/client`. */
export const CLIENT_NAME = /^[A-Za-z0-9._@/-]{1,64}$/;
/** A client version as gateways record it: semver, build metadata included. */
export const CLIENT_VERSION = /^[A-Za-z0-9._+-]{1,64}$/;
/** An operation's id in its client's manifest (a persisted-query hash, or the client's own key). */
export const OPERATION_ID = /^[A-Za-z0-9._:-]{1,128}$/;

const clientVersionRequest = { client: z.string().regex(CLIENT_NAME), version: z.string().regex(CLIENT_VERSION) };

/** `POST /v1/operations`: one client version's whole list (it replaces the one before). */
export const PushRequest = z.strictObject({
  ...clientVersionRequest,
  operations: z
    .array(z.strictObject({ id: z.string().regex(OPERATION_ID), body: z.string().max(100_000), name: z.string().max(200).optional() }))
    .min(1)
    .max(5_000),
});
export type PushRequest = z.infer<typeof PushRequest>;

/** `POST /v1/operations/retire`. */
export const RetireRequest = z.strictObject(clientVersionRequest);
export type RetireRequest = z.infer<typeof RetireRequest>;

const ClientVersion = z.object({
  client: z.string(),
  version: z.string(),
  pushedAt: z.string(),
  pushedBy: z.string(),
  retiredAt: z.string().nullable(),
});

/** `GET /v1/operations[?client]`: every client version's list, counted. */
export const ClientsAnswer = z.object({ clients: z.array(ClientVersion.extend({ operations: z.number() })) });
export type ClientsAnswer = z.infer<typeof ClientsAnswer>;

/** `GET /v1/operations/:client/:version`: one version's list whole. */
export const ClientVersionAnswer = ClientVersion.extend({
  operations: z.array(z.object({ id: z.string(), name: z.string(), body: z.string() })),
});
export type ClientVersionAnswer = z.infer<typeof ClientVersionAnswer>;

/** `POST /v1/operations`: 201 with what the push changed, 200 `unchanged` when nothing. */
export const PushAnswer = z.object({
  client: z.string(),
  version: z.string(),
  operations: z.number(),
  added: z.number(),
  removed: z.number(),
  unchanged: z.literal(true).optional(),
});
export type PushAnswer = z.infer<typeof PushAnswer>;

/** `POST /v1/operations` refused (400): each operation refused, and why. */
export const PushRefusedAnswer = ErrorAnswer.extend({
  refused: z.array(z.object({ id: z.string(), name: z.string(), reason: z.string() })).optional(),
});
export type PushRefusedAnswer = z.infer<typeof PushRefusedAnswer>;

/** `POST /v1/operations/retire`. */
export const RetireAnswer = z.object({ client: z.string(), version: z.string(), retiredAt: z.string() });
export type RetireAnswer = z.infer<typeof RetireAnswer>;

/** One of these schemas, for a reader that takes any (and imports no zod of its own). */
export type WireSchema<T> = z.ZodType<T>;

/** `json` read by `schema`; throws an Error naming the first member it refuses (`hash: missing`). */
export function parseWire<T>(schema: WireSchema<T>, json: unknown): T {
  const result = schema.safeParse(json);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const path = (issue?.path ?? []).map(String).join('.');
  const message = issue?.message ?? 'invalid';
  throw new Error(path === '' ? message : `${path}: ${message}`);
}
