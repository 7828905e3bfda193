import type { Request, RequestHandler, Response, Router } from 'express';
import { z } from 'zod';
import { badRequest, isHaloError } from '../errors/errors';
import { route } from '../http/http';
import { INVALID_ID, isIdText, type IdRule } from '../domain/ids';
import { callerFromHeader, type Caller } from '../auth/jwt';
import { isScope, requireDeclaredScope, type Scope } from '../auth/scopes';
import { EDGE_SERVICE_NAMES, isEdgeService, SERVICE_NAMES, type EdgeServiceName, type ServiceName } from '../config/topology';

/**
 * A service's public REST routes, declared once in its own folder (`src/rest/manifest.ts`):
 * method, path, auth, the zod schemas of its params, query and body, its responses, the API
 * versions it exists in and their deprecation. From the same declaration:
 *
 * - the service mounts its handlers with validation (`mountRestRoutes`): a request that breaks a
 *   schema gets the contract's 400 naming the field, before the handler runs;
 * - `npm run compose` builds the gateway's route table (`composeRouteTable`) and one OpenAPI 3.1
 *   document (`restOpenApi`); zod 4's JSON Schema output is draft 2020-12, the dialect of OpenAPI 3.1.
 *
 * So a service adds a route or deprecates a version in its own folder; the gateway learns it from
 * the composed files (docs/api/conventions.md, "Versioning").
 */

export const REST_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type RestMethod = (typeof REST_METHODS)[number];

/** A version's retirement notice: `Deprecation: true`, `Sunset: <HTTP-date>`, `Link: <guide>; rel="successor-version"`. */
export interface RestDeprecation {
  /** When the version stops answering: an HTTP-date or an ISO-8601 UTC date (`2027-09-01`). */
  sunset: string;
  /** The migration guide: an absolute URL, or a path the gateway serves (`/docs/migrations/…`). */
  link: string;
}

export interface RestResponse {
  description: string;
  /** The JSON body, for the OpenAPI document (responses are not validated at run time). */
  schema?: z.ZodType;
  /** What the `Location` header of this answer points to (a created resource; a redirect's target, where it is required). */
  location?: string;
  /** This answer carries `Retry-After` (seconds). Implied for 429 and 503. */
  retryAfter?: true;
}

/** What one API version of a route changes: its deprecation, and schemas that differ from the route's. */
export interface RestVersion {
  deprecated?: RestDeprecation;
  query?: z.ZodObject;
  body?: z.ZodType;
  responses?: Readonly<Record<number, RestResponse>>;
}

export interface RestRoute<Id extends string = string> {
  /** The OpenAPI operationId (version N ≥ 2 gets a `V<N>` suffix) and the key of its handler. */
  id: Id;
  method: RestMethod;
  /** Express / find-my-way syntax: `/posts/:id`. */
  path: string;
  summary: string;
  description?: string;
  /**
   * `required`: the gateway refuses a request without a valid caller (401) before it reaches the
   * service; roles stay the service's to check (403).
   */
  auth?: 'required';
  /**
   * The scope an API key needs for this route (only with `auth`). Without one, no key may call it:
   * the kit answers 403 `Forbidden` to a key that lacks it, before the handler (kit/src/auth/scopes.ts).
   */
  scope?: Scope;
  params?: z.ZodObject;
  query?: z.ZodObject;
  /** The JSON body; an object schema also receives a body that is absent or not an object, as `{}`. */
  body?: z.ZodType;
  responses: Readonly<Record<number, RestResponse>>;
  /** The API versions the route exists in (default: version 1 only). */
  versions?: Readonly<Record<number, RestVersion>>;
  /** Answered by a router of the service's own (where, for people); composed, but not mounted here. */
  mountedElsewhere?: string;
  /**
   * Retry-safe with a client key: the request header `Idempotency-Key` is required, and a replay
   * answers with `Idempotent-Replayed: true` (both declared in the OpenAPI document).
   */
  idempotent?: true;
  /** The cookie the route's answers set or clear (`Set-Cookie`), for the OpenAPI document. */
  setsCookie?: string;
}

export interface RestManifest<Id extends string = string> {
  /** An edge service (one the gateway routes to), or an internal one with `internal: true`. */
  service: ServiceName;
  /** One line about the service's routes: the OpenAPI tag's description. */
  description: string;
  routes: readonly RestRoute<Id>[];
  /**
   * An internal service's HTTP API (the registry's, which the gateway, the CLIs and the Studio
   * call): validated and mounted like any, documented on its own (`internalOpenApi`), never
   * composed into the gateway's route table nor its public OpenAPI document. The edge's
   * conventions (`auth`/`scope`, a 201's `Location`) are the gateway's, so they do not apply.
   */
  internal?: true;
}

/** Whether a manifest is part of the public edge (the gateway's route table and OpenAPI). */
export const isEdgeManifest = (m: RestManifest): m is RestManifest & { service: EdgeServiceName } =>
  !m.internal && isEdgeService(m.service);

const ROUTE_ID = /^[a-z][A-Za-z0-9]*$/;
const PATH = /^(\/(:[A-Za-z_][A-Za-z0-9_]*|[A-Za-z0-9._~-]+))+$/;
const LINK = /^(https?:\/\/|\/)[^\s<>]*$/;

/**
 * Paths the gateway answers itself: a service may not declare them. `/api/v<N>/…` is how a client
 * picks a version, so no route path starts with `/api/v`.
 */
export const GATEWAY_PATHS: readonly string[] = ['/', '/graphql', '/healthz', '/readyz', '/openapi.json', '/docs'];
export const GATEWAY_PATH_PREFIXES: readonly string[] = ['/docs/', '/graphiql/'];
const VERSION_SELECTOR = /^\/api\/v\d/;

export const isGatewayPath = (path: string) =>
  GATEWAY_PATHS.includes(path) || GATEWAY_PATH_PREFIXES.some((prefix) => path.startsWith(prefix)) || VERSION_SELECTOR.test(path);

/** The path parameters of a route path: `/users/:userId/posts` → `['userId']`. */
export const pathParams = (path: string): string[] => [...path.matchAll(/:([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]!);

/** The versions of a route, ascending, with what each changes. */
export function routeVersions(route: RestRoute): [number, RestVersion][] {
  return Object.entries(route.versions ?? { 1: {} })
    .map(([n, v]): [number, RestVersion] => [Number(n), v])
    .sort((a, b) => a[0] - b[0]);
}

/**
 * Where a service serves version N of a route: version 1 at the path itself, N ≥ 2 under `/v<N>`
 * (v2 of `/products/7` is `/v2/products/7`). The gateway maps `/api/v<N>/…` there.
 */
export const upstreamPrefix = (version: number): string => (version === 1 ? '' : `/v${version}`);

const IMF_FIXDATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/;
const ISO_UTC_DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?Z)?$/;

/** `Wed, 01 Sep 2027 00:00:00 GMT` from an HTTP-date or an ISO-8601 UTC date (`2027-09-01`, `…T00:00:00Z`); null otherwise. */
export function toHttpDate(value: string): string | null {
  const v = value.trim();
  if (!IMF_FIXDATE.test(v) && !ISO_UTC_DATE.test(v)) return null;
  const ms = Date.parse(v);
  if (Number.isNaN(ms)) return null;
  const date = new Date(ms);
  // A real calendar day, and for an HTTP-date its real weekday: no `2027-02-30`, no `Mon, 01 Sep 2027`.
  if (v.endsWith('GMT') ? date.toUTCString() !== v : date.toISOString().slice(0, 10) !== v.slice(0, 10)) return null;
  return date.toUTCString();
}

/**
 * Checks a manifest once, where it is declared (so a mistake stops the service and `npm run
 * compose` alike) and returns it unchanged, its exact type kept (route ids as literals, each
 * route's schemas) so `mountRestRoutes` hands every handler its own route's typed input.
 */
export function defineRestManifest<const M extends RestManifest>(manifest: M): M {
  const where = (r: RestRoute) => `${manifest.service}: REST route ${r.id} (${r.method} ${r.path})`;
  if (!(SERVICE_NAMES as readonly string[]).includes(manifest.service))
    throw new Error(`REST manifest of an unknown service: ${String(manifest.service)}`);
  if (Boolean(manifest.internal) === isEdgeService(manifest.service)) {
    throw new Error(`${manifest.service}: REST manifest: \`internal: true\` is for, and only for, a service the gateway does not route to`);
  }
  const ids = new Set<string>();
  const seen = new Set<string>();
  for (const r of manifest.routes) {
    if (!ROUTE_ID.test(r.id)) throw new Error(`${where(r)}: the id must be camelCase letters and digits`);
    if (ids.has(r.id)) throw new Error(`${where(r)}: duplicate id`);
    ids.add(r.id);
    if (!REST_METHODS.includes(r.method)) throw new Error(`${where(r)}: unknown method`);
    if (!PATH.test(r.path)) throw new Error(`${where(r)}: the path must be /segments or /:params, without a trailing slash`);
    if (isGatewayPath(r.path)) throw new Error(`${where(r)}: the gateway owns this path`);
    if (manifest.internal && (r.auth || r.scope))
      throw new Error(`${where(r)}: auth and scope are the edge's; an internal API authorises itself`);
    if (r.scope !== undefined && (!r.auth || !isScope(r.scope)))
      throw new Error(`${where(r)}: a scope needs auth and must be one of SCOPES`);
    const declared = pathParams(r.path);
    if (new Set(declared).size !== declared.length) throw new Error(`${where(r)}: a path parameter appears twice`);
    if (r.params) {
      const keys = Object.keys(r.params.shape);
      if (keys.length !== declared.length || keys.some((k) => !declared.includes(k))) {
        throw new Error(`${where(r)}: params must describe exactly the path parameters (${declared.join(', ') || 'none'})`);
      }
    }
    const versions = routeVersions(r);
    for (const responses of [r.responses, ...versions.map(([, v]) => v.responses ?? {})]) {
      for (const [status, response] of Object.entries(responses)) {
        if (/^3\d\d$/.test(status) && status !== '304' && !response.location)
          throw new Error(`${where(r)}: redirect ${status} needs a location`);
        // 201 Created names what it created (RFC 9110 §15.3.2): the handler sends it, the document declares it.
        if (status === '201' && !response.location && !manifest.internal)
          throw new Error(`${where(r)}: 201 needs a location (the created resource)`);
      }
    }
    if (versions.length === 0) throw new Error(`${where(r)}: no version`);
    for (const [n, v] of versions) {
      if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${where(r)}: version ${n} is not a positive integer`);
      const key = `${r.method} ${r.path} v${n}`;
      if (seen.has(key)) throw new Error(`${where(r)}: declared twice for version ${n}`);
      seen.add(key);
      if (v.deprecated) {
        if (toHttpDate(v.deprecated.sunset) === null) {
          throw new Error(`${where(r)}: version ${n} sunset must be an HTTP-date or an ISO-8601 UTC date`);
        }
        if (!LINK.test(v.deprecated.link)) throw new Error(`${where(r)}: version ${n} link must be an absolute URL or a path`);
      }
    }
  }
  return manifest;
}

// ── Field schemas ─────────────────────────────────────────────────────────────────────────────

/** JSON Schema keywords that describe a field in the OpenAPI document (merged into zod's output). */
export type JsonSchemaMeta = Record<string, unknown>;

/**
 * A field checked by an existing rule: a function that throws the contract's 400 (a HaloError)
 * for a bad value. The rule's own message becomes the answer, so the wording lives in one place;
 * `schema` describes the field in the OpenAPI document.
 */
export function ruleField(rule: (raw: unknown) => unknown, schema: JsonSchemaMeta): z.ZodType<unknown> {
  return z
    .unknown()
    .superRefine((raw, ctx) => {
      try {
        rule(raw);
      } catch (err) {
        if (!isHaloError(err) || err.httpStatus !== 400) throw err;
        ctx.addIssue({ code: 'custom', message: err.message });
      }
    })
    .meta(schema);
}

/**
 * A value parsed by a domain rule: checked as `ruleField` checks it (the rule's 400 is the
 * answer), and the handler receives what the rule returns, typed, so the domain takes it as is.
 * `describedBy` is what clients read of it in the OpenAPI document: a zod schema (a shared wire
 * declaration) or JSON Schema keywords. A body declared so is handed to the rule as sent (absent,
 * null, an array), so the rule answers for that too.
 */
export function ruleParsed<T>(rule: (raw: unknown) => T, describedBy: z.ZodType | JsonSchemaMeta): z.ZodType<T, unknown> {
  return z
    .unknown()
    .transform((raw, ctx): T => {
      try {
        return rule(raw);
      } catch (err) {
        if (!isHaloError(err) || err.httpStatus !== 400) throw err;
        ctx.addIssue({ code: 'custom', message: err.message });
        return z.NEVER;
      }
    })
    .meta(describedBy instanceof z.ZodType ? openApiSchema(describedBy, 'input') : describedBy);
}

/**
 * zod → JSON Schema 2020-12 (OpenAPI 3.1's dialect), without the `$schema` line each would repeat
 * and without what only restates a type to a reader: the ±2^53 bounds of every integer, the
 * regular expression behind `format: date-time`.
 */
export function openApiSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchemaMeta {
  const out = z.toJSONSchema(schema, {
    io,
    unrepresentable: 'any',
    target: 'draft-2020-12',
    override: ({ jsonSchema: js }) => {
      if (js.minimum === Number.MIN_SAFE_INTEGER) delete js.minimum;
      if (js.maximum === Number.MAX_SAFE_INTEGER) delete js.maximum;
      if (js.format === 'date-time') delete js.pattern;
      // Answers may gain members (a compatible change): a client must not be told to refuse them.
      if (io === 'output' && js.additionalProperties === false) delete js.additionalProperties;
    },
  }) as JsonSchemaMeta;
  const { $schema: _dialect, ...rest } = out;
  return rest;
}

/**
 * A path id as text: 1–15 decimal digits (at least `min`), otherwise 400 `Invalid id` — the kit's
 * one id rule (`parseId`, kit/src/domain/ids.ts). The validated string; a manifest uses `pathId`, which
 * hands the handler the number.
 */
export function idParam(rule: IdRule = {}) {
  return z
    .string()
    .refine((s) => isIdText(s, rule), INVALID_ID)
    .meta({ type: 'integer', minimum: rule.min ?? 0, maximum: 999_999_999_999_999 });
}

/**
 * A path id parsed once, at the boundary: `idParam`'s check, then the number. The handler (and
 * the domain behind it) receives `number`; the OpenAPI document still describes the path's text.
 */
export const pathId = (rule: IdRule = {}) => idParam(rule).transform(Number);

// ── Validation and mounting ───────────────────────────────────────────────────────────────────

/** A request's validated parts, handed to its handler. */
export interface RestInput {
  /** The API version the request was routed to. */
  version: number;
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** zod's own wording never reaches a client: a field without a message of its own is named like this. */
const fallbackMessage = (issue: { path?: PropertyKey[]; input?: unknown; code: string }) => {
  const field = issue.path && issue.path.length > 0 ? issue.path.map(String).join('.') : 'body';
  return issue.code === 'invalid_type' && issue.input === undefined ? `${field} is required` : `${field} is invalid`;
};

function check(schema: z.ZodType, value: unknown): unknown {
  const result = schema.safeParse(value, { error: fallbackMessage });
  // The first problem, in declaration order: the contract names one field per answer.
  if (!result.success) throw badRequest(result.error.issues[0]?.message ?? 'Bad request');
  return result.data;
}

/** The schemas that apply to one version of a route. */
export function versionSchemas(route: RestRoute, version: number) {
  const v = route.versions?.[version] ?? {};
  return { params: route.params, query: v.query ?? route.query, body: v.body ?? route.body };
}

/**
 * Validates a request against one version of a route: params, then query, then body, the first
 * problem answered as 400 `<message naming the field>` (a HaloError for the error mapper).
 */
export function validateRestInput(
  route: RestRoute,
  version: number,
  raw: { params?: unknown; query?: unknown; body?: unknown },
): RestInput {
  const s = versionSchemas(route, version);
  const params = (s.params ? check(s.params, raw.params ?? {}) : (raw.params ?? {})) as Record<string, string>;
  const query = (s.query ? check(s.query, raw.query ?? {}) : (raw.query ?? {})) as Record<string, unknown>;
  let body = raw.body;
  if (s.body) body = check(s.body, s.body instanceof z.ZodObject && !isPlainObject(body) ? {} : body);
  return { version, params, query, body };
}

// ── Typed input: each route's own params, query and body ───────────────────────────────────────

type Output<S, Otherwise> = S extends z.ZodType ? z.output<S> : Otherwise;

/** The bodies a route's versions declare of their own (never, when none does). */
type VersionBodies<R> = R extends { versions: infer V }
  ? { [K in keyof V]: V[K] extends { body: infer B } ? Output<B, never> : never }[keyof V]
  : never;
type VersionQueries<R> = R extends { versions: infer V }
  ? { [K in keyof V]: V[K] extends { query: infer Q } ? Output<Q, never> : never }[keyof V]
  : never;

/** What a route's handler receives as params, query and body: its schemas' output, else the raw shapes. */
export type RestParams<R> = R extends { params: infer P } ? Output<P, Record<string, string>> : Record<string, string>;
export type RestQuery<R> = R extends { query: infer Q } ? Output<Q, Record<string, unknown>> | VersionQueries<R> : Record<string, unknown>;
export type RestBody<R> = R extends { body: infer B } ? Output<B, unknown> | VersionBodies<R> : unknown;

/**
 * Who is calling, verified once per request on first use (a public route never looks at
 * credentials): null without a token, 401 `Invalid token` for a bad one, every time it is asked.
 */
export interface RestCaller {
  caller: () => Caller | null;
}

/** A request as its handler sees it: validated input typed by its route, and the caller. */
export interface RestRequest<R = RestRoute> extends RestCaller {
  /** The API version the request was routed to. */
  version: number;
  params: RestParams<R>;
  query: RestQuery<R>;
  body: RestBody<R>;
}

export type RestHandler<R = RestRoute> = (req: Request, res: Response, input: RestRequest<R>) => unknown;

/**
 * A handler, optionally with `authorize`: a check of who may call (401/403) that must come before
 * validation, as the service's own order of checks says (who, then what, then which).
 */
export type RestHandlerSpec<R = RestRoute> =
  RestHandler<R> | { authorize: (req: Request, who: RestCaller) => unknown; handle: RestHandler<R> };

/** One handler per route of the manifest that is mounted here, typed by its route (keys checked against its ids). */
export type RestHandlers<M extends RestManifest> = {
  [R in M['routes'][number] as R['id']]?: RestHandlerSpec<R>;
};

/** The caller of a request, verified at most once whoever asks (scope check, `authorize`, handler). */
function callerOnce(req: Request, jwtSecret: string | undefined): () => Caller | null {
  let verified: { caller: Caller | null } | { error: unknown } | undefined;
  return () => {
    if (!verified) {
      try {
        verified = { caller: callerFromHeader(req.headers.authorization, jwtSecret) };
      } catch (error) {
        verified = { error };
      }
    }
    if ('error' in verified) throw verified.error;
    return verified.caller;
  };
}

/** The verified caller, or null: a bad token is the handler's to answer (401), not the scope check's. */
function callerOrNull(caller: () => Caller | null): Caller | null {
  try {
    return caller();
  } catch {
    return null;
  }
}

/**
 * Mounts every route of a manifest (except those `mountedElsewhere`) on `router`, each version at
 * its upstream path, with a 405 and `Allow` for other methods. A route without a handler, or a
 * handler without a route, stops the service at start-up: nothing declared can silently 404.
 * Each handler is typed by its route of `M` (inferred from `manifest`); naming only `Id` instead
 * gives the untyped form (raw params and query, `unknown` body).
 */
export function mountRestRoutes<Id extends string, M extends RestManifest<Id> = RestManifest<Id>>(
  router: Router,
  manifest: M,
  handlers: NoInfer<RestHandlers<M>>,
  /** The secret that verifies callers, so an API key is held to each route's declared scope. */
  opts: { jwtSecret: string | undefined },
): Router {
  const byPath = new Map<string, Partial<Record<Lowercase<RestMethod>, RequestHandler>>>();
  const known = new Set<string>();
  for (const r of manifest.routes) {
    known.add(r.id);
    // The per-route types end here: at run time every route is a RestRoute.
    const spec = (handlers as Partial<Record<string, RestHandlerSpec>>)[r.id];
    if (r.mountedElsewhere) {
      if (spec) throw new Error(`${manifest.service}: REST route ${r.id} is mounted by ${r.mountedElsewhere}, not here`);
      continue;
    }
    if (!spec) throw new Error(`${manifest.service}: no handler for REST route ${r.id} (${r.method} ${r.path})`);
    const { authorize, handle } = typeof spec === 'function' ? { authorize: undefined, handle: spec } : spec;
    const scopes = r.scope ? [[r.scope]] : [];
    // Public routes stay public: only an authenticated route holds a key to its scope.
    const keyCheck = r.auth ? (caller: () => Caller | null) => requireDeclaredScope(callerOrNull(caller), scopes) : undefined;
    for (const [version] of routeVersions(r)) {
      const path = `${upstreamPrefix(version)}${r.path}`;
      const methods = byPath.get(path) ?? {};
      byPath.set(path, methods);
      methods[r.method.toLowerCase() as Lowercase<RestMethod>] = async (req, res) => {
        const caller = callerOnce(req, opts.jwtSecret);
        keyCheck?.(caller);
        if (authorize) await authorize(req, { caller });
        const input = validateRestInput(r, version, { params: req.params, query: req.query, body: req.body });
        await handle(req, res, { ...input, caller });
      };
    }
  }
  for (const id of Object.keys(handlers)) {
    if (!known.has(id)) throw new Error(`${manifest.service}: handler ${id} has no route in the REST manifest`);
  }
  for (const [path, methods] of byPath) route(router, path, methods);
  return router;
}

// ── The composed route table (gateway/routes.json) ────────────────────────────────────────────

/**
 * The gateway's route table as `npm run compose` writes it and the gateway reads it: the one
 * format both sides share, so it is checked on both.
 */
export const composedRouteSchema = z.strictObject({
  service: z.enum(EDGE_SERVICE_NAMES as [EdgeServiceName, ...EdgeServiceName[]]),
  method: z.enum(REST_METHODS),
  path: z.string().regex(PATH),
  auth: z.literal(true).optional(),
  /** Absent: version 1 only. */
  versions: z.array(z.number().int().positive()).min(1).optional(),
  /** Per version (a decimal key), its notice; `sunset` is an HTTP-date here. */
  deprecated: z
    .record(
      z.string().regex(/^[1-9]\d*$/),
      z.strictObject({
        sunset: z.string().refine((s) => toHttpDate(s) === s, 'must be an HTTP-date'),
        link: z.string().regex(LINK),
      }),
    )
    .optional(),
});

export const composedRouteTableSchema = z.strictObject({
  $comment: z.string().optional(),
  defaultVersion: z.number().int().positive(),
  /** Every version some route exists in, with where services serve it. */
  versions: z.record(z.string().regex(/^[1-9]\d*$/), z.strictObject({ upstreamPrefix: z.string() })),
  routes: z.array(composedRouteSchema),
});

export type ComposedRoute = z.infer<typeof composedRouteSchema>;
export type ComposedRouteTable = z.infer<typeof composedRouteTableSchema>;

/**
 * One service's entries of the gateway's route table (its part of a published contract,
 * docs/registry.md): one entry per method and path, its versions merged, sorted. Throws when the
 * manifest declares one method, path and version twice.
 */
export function serviceRouteEntries(manifest: RestManifest): ComposedRoute[] {
  if (!isEdgeManifest(manifest))
    throw new Error(`${manifest.service}: an internal REST manifest is never composed into the gateway's route table`);
  const entries = new Map<string, ComposedRoute>();
  for (const r of manifest.routes) {
    const key = `${r.method} ${r.path}`;
    const versions = routeVersions(r);
    let entry = entries.get(key);
    if (entry && Boolean(entry.auth) !== (r.auth === 'required')) {
      throw new Error(`${key} is declared by ${manifest.service} twice (${r.id} among them) with another auth`);
    }
    if (!entry) {
      entry = { service: manifest.service, method: r.method, path: r.path, ...(r.auth ? { auth: true as const } : {}) };
      entries.set(key, entry);
    }
    const merged = new Set([...(entry.versions ?? []), ...versions.map(([n]) => n)]);
    if (merged.size !== (entry.versions?.length ?? 0) + versions.length) throw new Error(`${key} is declared twice for one version`);
    entry.versions = [...merged].sort((a, b) => a - b);
    for (const [n, v] of versions) {
      if (v.deprecated) {
        entry.deprecated = { ...entry.deprecated, [n]: { sunset: toHttpDate(v.deprecated.sunset)!, link: v.deprecated.link } };
      }
    }
  }
  return [...entries.values()].sort(compareRoutes).map(({ versions, ...r }): ComposedRoute => ({
    ...r,
    ...(versions && (versions.length > 1 || versions[0] !== 1) ? { versions } : {}),
  }));
}

const compareRoutes = (a: ComposedRoute, b: ComposedRoute) =>
  a.service.localeCompare(b.service) || a.path.localeCompare(b.path) || REST_METHODS.indexOf(a.method) - REST_METHODS.indexOf(b.method);

/**
 * The gateway's route table from every service's entries (`serviceRouteEntries`, or a published
 * contract's): sorted, so the file only changes when a route does. Throws, naming both, when two
 * services declare one method and path.
 */
export function mergeRouteTable(parts: readonly (readonly ComposedRoute[])[], comment?: string): ComposedRouteTable {
  const owners = new Map<string, string>();
  const allVersions = new Set<number>([1]);
  const routes: ComposedRoute[] = [];
  for (const part of parts) {
    for (const r of part) {
      const key = `${r.method} ${r.path}`;
      const owner = owners.get(key);
      if (owner !== undefined) throw new Error(`${key} is declared by ${owner} and by ${r.service}`);
      owners.set(key, r.service);
      for (const n of r.versions ?? [1]) allVersions.add(n);
      routes.push(r);
    }
  }
  routes.sort(compareRoutes);
  const versions = Object.fromEntries(
    [...allVersions].sort((a, b) => a - b).map((n) => [String(n), { upstreamPrefix: upstreamPrefix(n) }]),
  );
  return composedRouteTableSchema.parse({ ...(comment ? { $comment: comment } : {}), defaultVersion: 1, versions, routes });
}

/** The gateway's route table from every service's manifest (`npm run compose`). */
export function composeRouteTable(manifests: readonly RestManifest[], comment?: string): ComposedRouteTable {
  return mergeRouteTable(manifests.map(serviceRouteEntries), comment);
}
