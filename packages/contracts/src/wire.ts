import { z } from 'zod';

/**
 * The registry's wire contract (docs/registry.md, "Registry HTTP API"), declared once: what its
 * routes send (services/registry/src/rest/, typed with these), what the gateway polls (parsed with
 * these) and what the CLIs read (tools/src/subgraph.ts, tools/src/operations.ts). A light entry
 * (`@halo/contracts/wire`): it imports zod alone, so the gateway loads no composition code.
 *
 * Each schema and its inferred type share a name. Objects are zod's default (unknown members
 * dropped), so a registry may add members without breaking an older reader.
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

// --- Checks and publishes (`npm run subgraph`) -----------------------------------------------

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

/** A service's contract as published: its GraphQL schema (null without one) and its REST part. */
export const WireContract = z.object({ service: z.string(), url: z.string(), sdl: z.string().nullable(), rest: z.unknown() });
export type WireContract = z.infer<typeof WireContract>;

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

// --- Client operation lists (`npm run operations`) --------------------------------------------

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
