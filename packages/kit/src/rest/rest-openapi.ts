import { z } from 'zod';
import {
  isEdgeManifest,
  openApiSchema,
  pathParams,
  REST_METHODS,
  routeVersions,
  serviceRouteEntries,
  toHttpDate,
  versionSchemas,
  type ComposedRoute,
  type RestManifest,
  type RestResponse,
  type RestRoute,
  type RestVersion,
} from './rest-manifest';
import { ERROR_REF, usedComponents } from './rest-openapi-components';

/**
 * The OpenAPI 3.1 document of the services' REST routes, from their manifests (rest-manifest.ts):
 * each service's part (`serviceOpenApi`, published in its contract) and their merge
 * (`mergeOpenApi`, `npm run compose`). Everything a client must send or read is generated from
 * what a route declares, so a new route cannot forget it: `security` (`[]` when public), the
 * `Idempotency-Key` parameter and `Idempotent-Replayed` (`idempotent`), `Set-Cookie`
 * (`setsCookie`), `Location` (a response's `location`), `Retry-After` (429, 503, `retryAfter`),
 * the deprecation notice, `X-Request-Id` on every answer, the gateway's rate-limit fields and 429
 * on every operation, and on the
 * unversioned path each negotiated version's shape as its own media type. `npm test` lints the
 * composed document with Redocly and Spectral (docs/api/README.md, "Lint").
 */

export type JsonObject = Record<string, unknown>;

export interface OpenApiInfo {
  title: string;
  version: string;
  description?: string;
  contact?: { name?: string; url?: string; email?: string };
  /** An SPDX `identifier` (OpenAPI 3.1), or a `url`. */
  license?: { name: string; identifier?: string; url?: string };
}

const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: ERROR_REF } } });

/** zod → JSON Schema, as the manifest's fields describe themselves (`openApiSchema`). */
const jsonSchema = (schema: z.ZodType, io: 'input' | 'output'): JsonObject => openApiSchema(schema, io);

/** `/users/:userId/posts` → `/users/{userId}/posts`. */
const openApiPath = (path: string) => path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');

function parameters(route: RestRoute, query: z.ZodObject | undefined): JsonObject[] {
  const out: JsonObject[] = [];
  const params = route.params ? (jsonSchema(route.params, 'input').properties as Record<string, JsonObject>) : {};
  for (const name of pathParams(route.path)) {
    const { description, ...schema } = params[name] ?? { type: 'string' };
    out.push({ name, in: 'path', required: true, ...(description ? { description } : {}), schema });
  }
  if (query) {
    const q = jsonSchema(query, 'input');
    const required = new Set((q.required as string[] | undefined) ?? []);
    for (const [name, s] of Object.entries((q.properties as Record<string, JsonObject>) ?? {})) {
      const { description, ...schema } = s;
      out.push({ name, in: 'query', required: required.has(name), ...(description ? { description } : {}), schema });
    }
  }
  return out;
}

/** Other versions of a route, as a client reaches them on its unversioned path (`Accept`, `?version=`). */
type Negotiated = [number, RestVersion][];

/**
 * Where an operation is listed: the unversioned path (version 1, where the others are negotiated)
 * or `/api/v<N>/<path>`, which names its version (v1 there for a route that has several).
 */
type Listed = 'unversioned' | 'prefixed';

/** The other versions of a route a client reaches on its unversioned path (`Accept`, `?version=`). */
const negotiated = (route: RestRoute, at: Listed): Negotiated =>
  at === 'unversioned' ? routeVersions(route).filter(([n]) => n !== 1) : [];

/** `application/vnd.halo.v2+json`: how a client asks for version N on the unversioned path. */
export const versionMediaType = (n: number) => `application/vnd.halo.v${n}+json`;

/**
 * What every operation of a document carries besides its route's own declaration: the public
 * edge's (the gateway's security schemes, rate-limit fields and 429) or an internal API's (its own
 * security, no gateway in front).
 */
interface Surface {
  security: (route: RestRoute) => JsonObject[];
  /** Who may call the route, as its description says it. */
  access: (route: RestRoute) => string;
  /** The headers of every answer. */
  everyAnswer: JsonObject;
  /** The gateway's 429, and the 401/403 its `auth` implies. */
  gateway: boolean;
}

/** Who may call the route, as every operation's description says it. */
function access(route: RestRoute): string {
  if (!route.auth) return 'Public: no credentials needed (`security: []`).';
  return route.scope
    ? `Needs a bearer token, or an API key with scope \`${route.scope}\`.`
    : 'Needs a bearer token; no API key may call it.';
}

/** A declared answer's body: JSON, and on the unversioned path each negotiated version's own shape. */
function responseContent(route: RestRoute, others: Negotiated, status: string, r: RestResponse): JsonObject | undefined {
  if (!r.schema) return Number(status) >= 400 ? { 'application/json': { schema: ERROR_REF } } : undefined;
  const content: JsonObject = { 'application/json': { schema: jsonSchema(r.schema, 'output') } };
  for (const [n, other] of others) {
    const schema = other.responses?.[Number(status)]?.schema ?? route.responses[Number(status)]?.schema;
    if (schema) content[versionMediaType(n)] = { schema: jsonSchema(schema, 'output') };
  }
  return content;
}

/** The parameters of one version of a route: path, query, `Idempotency-Key`, the version selector. */
function operationParameters(route: RestRoute, others: Negotiated, query: z.ZodObject | undefined): JsonObject[] {
  const out = parameters(route, query);
  if (route.idempotent) out.push({ $ref: '#/components/parameters/IdempotencyKey' });
  if (others.length > 0) {
    out.push({
      name: 'version',
      in: 'query',
      required: false,
      description:
        `The API version of the answer (default 1). \`?version=N\` and \`Accept: ${versionMediaType(others[0]![0])}\` pick the same; ` +
        'an unknown or malformed version is 400 `Unsupported API version`, two that disagree 400 `Conflicting API versions`.',
      schema: { type: 'integer', enum: [1, ...others.map(([n]) => n)], default: 1 },
    });
  }
  return out;
}

function operation(m: RestManifest, route: RestRoute, version: number, v: RestVersion, at: Listed, surface: Surface): JsonObject {
  const s = versionSchemas(route, version);
  const notice = v.deprecated ? { ...v.deprecated, sunset: toHttpDate(v.deprecated.sunset)! } : undefined;
  const others = negotiated(route, at);
  const withHeaders = (response: JsonObject, extra: JsonObject): JsonObject => ({
    ...response,
    headers: { ...surface.everyAnswer, ...extra },
  });
  const responses = operationResponses(route, others, v, notice, surface);
  const parameters = operationParameters(route, others, s.query);
  if ((s.params || s.query || s.body || parameters.length > 0) && !responses['400']) {
    responses['400'] = withHeaders(errorResponse('Invalid input: the message names the field'), {});
  }
  if (surface.gateway && route.auth && !responses['401'])
    responses['401'] = withHeaders(errorResponse('`Token required`, `Invalid token` or `Invalid API key`'), {});
  if (surface.gateway && route.auth && !responses['403']) {
    const forbidden = route.scope
      ? `\`Forbidden\`: an API key without scope \`${route.scope}\``
      : '`Forbidden`: any API key (no scope allows this route)';
    responses['403'] = withHeaders(errorResponse(forbidden), {});
  }
  const description = [
    route.description,
    surface.access(route),
    notice && `Version ${version} is deprecated: it stops answering on ${notice.sunset}. Migration guide: ${notice.link}`,
    others.length > 0 &&
      `Version ${others.map(([n]) => n).join(', ')} of this route answers here too, with \`Accept: ${versionMediaType(others[0]![0])}\` ` +
        `or \`?version=${others[0]![0]}\`: its answer is the \`${versionMediaType(others[0]![0])}\` media type (its ` +
        '`Content-Type` too; an error stays `application/json`), its request body that of the `/api/vN` operation.',
    route.idempotent && 'Retry-safe: send `Idempotency-Key`; a replay answers with `Idempotent-Replayed: true`.',
  ]
    .filter(Boolean)
    .join('\n\n');
  return {
    operationId: at === 'unversioned' ? route.id : `${route.id}V${version}`,
    summary: route.summary,
    description,
    tags: [m.service],
    ...(notice ? { deprecated: true } : {}),
    security: surface.security(route),
    ...(surface.gateway && route.auth ? { 'x-halo-api-key-scope': route.scope ?? null } : {}),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(s.body ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(s.body, 'input') } } } } : {}),
    responses: sortedResponses(responses),
  };
}

type Notice = { sunset: string; link: string } | undefined;

/**
 * The fields every answer carries: the gateway's rate-limit fields (README "Limits") and the
 * request id (docs/api/conventions.md), each a shared component.
 */
const EVERY_ANSWER_HEADERS = {
  RateLimit: { $ref: '#/components/headers/RateLimit' },
  'RateLimit-Policy': { $ref: '#/components/headers/RateLimit-Policy' },
  'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
};

/** The public edge: the gateway in front of every route. */
const EDGE: Surface = {
  security: (route) => (route.auth ? [{ bearerAuth: [] }, { apiKey: [] }] : []),
  access,
  everyAnswer: EVERY_ANSWER_HEADERS,
  gateway: true,
};

/** The headers one declared answer carries, from what its route and the answer declare. */
function responseHeaders(route: RestRoute, status: number, r: RestResponse, notice: Notice): JsonObject {
  const h: JsonObject = {};
  if (notice) {
    h.Deprecation = { $ref: '#/components/headers/Deprecation' };
    h.Sunset = { description: 'When this version stops answering', schema: { type: 'string', const: notice.sunset } };
    h.Link = { description: 'The migration guide', schema: { type: 'string', const: `<${notice.link}>; rel="successor-version"` } };
  }
  if (r.location) {
    // Always sent on a redirect, and on a 201 (it names what was created).
    const required = status === 201 || (status >= 300 && status < 400);
    h.Location = { description: r.location, required, schema: { type: 'string', format: 'uri-reference' } };
  }
  if (status === 429) h['Retry-After'] = { $ref: '#/components/headers/Retry-After' };
  else if (status === 503 || r.retryAfter) h['Retry-After'] = { $ref: '#/components/headers/Retry-After-Optional' };
  if (route.idempotent && status < 300) h['Idempotent-Replayed'] = { $ref: '#/components/headers/Idempotent-Replayed' };
  if (route.setsCookie && status < 400) h['Set-Cookie'] = { description: route.setsCookie, schema: { type: 'string' } };
  return h;
}

/** The declared answers of one version of a route, and the gateway's 429 (every REST route is rate-limited). */
function operationResponses(route: RestRoute, others: Negotiated, v: RestVersion, notice: Notice, surface: Surface): JsonObject {
  const responses: JsonObject = {};
  for (const [status, r] of Object.entries({ ...route.responses, ...v.responses })) {
    const content = responseContent(route, others, status, r);
    responses[status] = {
      description: r.description,
      ...(content ? { content } : {}),
      headers: { ...surface.everyAnswer, ...responseHeaders(route, Number(status), r, notice) },
    };
  }
  if (!surface.gateway) return responses;
  const own = responses['429'] as JsonObject | undefined;
  responses['429'] = own
    ? { ...own, description: `${String(own.description)}; or the gateway's rate limit: \`Too many requests\`` }
    : { $ref: '#/components/responses/TooManyRequests' };
  return responses;
}

const sortedResponses = (responses: JsonObject): JsonObject =>
  Object.fromEntries(Object.entries(responses).sort((a, b) => a[0].localeCompare(b[0])));

/** One service's part of the OpenAPI document: its tag and its operations by path and method. */
export interface OpenApiPart {
  tag: { name: string; description: string };
  paths: Record<string, Record<string, JsonObject>>;
}

/**
 * A service's OpenAPI part (its part of a published contract). Version 1 is the unversioned path;
 * version N ≥ 2 is listed at `/api/v<N>/<path>` (how the gateway serves it), and so is version 1
 * of a route that has several (`/api/v1/products`, operation `listProductsV1`): a client can name
 * every version of it by path. (The gateway answers `/api/v1/<path>` for any route; a route with
 * one version is listed once, at its unversioned path.)
 */
export function serviceOpenApi(m: RestManifest): OpenApiPart {
  if (!isEdgeManifest(m)) throw new Error(`${m.service}: an internal REST manifest is never part of the public OpenAPI document`);
  return openApiPart(m, EDGE);
}

function openApiPart(m: RestManifest, surface: Surface): OpenApiPart {
  const paths: Record<string, Record<string, JsonObject>> = {};
  const add = (r: RestRoute, n: number, v: RestVersion, path: string, at: Listed) => {
    const item = (paths[openApiPath(path)] ??= {});
    const method = r.method.toLowerCase();
    if (item[method]) throw new Error(`OpenAPI: ${r.method} ${openApiPath(path)} is declared twice`);
    item[method] = operation(m, r, n, v, at, surface);
  };
  for (const r of m.routes) {
    const versions = routeVersions(r);
    for (const [n, v] of versions) {
      if (n !== 1) add(r, n, v, `/api/v${n}${r.path}`, 'prefixed');
      else {
        add(r, n, v, r.path, 'unversioned');
        if (versions.length > 1) add(r, n, v, `/api/v1${r.path}`, 'prefixed');
      }
    }
  }
  return { tag: { name: m.service, description: m.description }, paths: sortedPaths(paths) };
}

const METHOD_ORDER = REST_METHODS.map((x) => x.toLowerCase());

/** Paths, and each path's methods, in a fixed order: the committed document only changes when a route does. */
function sortedPaths(paths: Record<string, Record<string, JsonObject>>): Record<string, Record<string, JsonObject>> {
  return Object.fromEntries(
    Object.keys(paths)
      .sort()
      .map((p) => [
        p,
        Object.fromEntries(Object.entries(paths[p]!).sort((a, b) => METHOD_ORDER.indexOf(a[0]) - METHOD_ORDER.indexOf(b[0]))),
      ]),
  );
}

/** One OpenAPI 3.1 document for every service's routes (`npm run compose`). */
export function restOpenApi(manifests: readonly RestManifest[], info: OpenApiInfo): JsonObject {
  return mergeOpenApi(manifests.map(serviceOpenApi), info);
}

/**
 * One OpenAPI 3.1 document from every service's part. Throws when a path and method, or an
 * operationId, is used twice.
 */
export function mergeOpenApi(parts: readonly OpenApiPart[], info: OpenApiInfo): JsonObject {
  return openApiDocument(parts, info, usedComponents);
}

function openApiDocument(
  parts: readonly OpenApiPart[],
  info: OpenApiInfo,
  components: (paths: Record<string, Record<string, JsonObject>>) => JsonObject,
): JsonObject {
  const paths: Record<string, Record<string, JsonObject>> = {};
  const operationIds = new Map<string, string>();
  const sorted = [...parts].sort((a, b) => a.tag.name.localeCompare(b.tag.name));
  for (const part of sorted) {
    for (const [path, ops] of Object.entries(part.paths)) {
      const item = (paths[path] ??= {});
      for (const [method, op] of Object.entries(ops)) {
        if (item[method]) throw new Error(`OpenAPI: ${method.toUpperCase()} ${path} is declared twice`);
        const id = op.operationId as string;
        if (operationIds.has(id)) throw new Error(`OpenAPI: operationId ${id} is used by ${operationIds.get(id)} and by ${part.tag.name}`);
        operationIds.set(id, part.tag.name);
        item[method] = op;
      }
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: info.title,
      version: info.version,
      ...(info.description ? { description: info.description } : {}),
      ...(info.contact ? { contact: info.contact } : {}),
      ...(info.license ? { license: info.license } : {}),
    },
    servers: [{ url: '/' }],
    tags: sorted.map((p) => ({ name: p.tag.name, description: p.tag.description })),
    paths: sortedPaths(paths),
    components: components(paths),
  };
}

// ── A service's REST part of its contract (docs/registry.md) ─────────────────────────────────

/** What a service publishes about its REST routes: its route-table entries and its OpenAPI part. */
export interface RestPart {
  routes: ComposedRoute[];
  openapi: OpenApiPart;
}

/** A service's REST part, built from its manifest: the same functions `npm run compose` merges. */
export function restPart(manifest: RestManifest): RestPart {
  return { routes: serviceRouteEntries(manifest), openapi: serviceOpenApi(manifest) };
}

// ── An internal service's own document ───────────────────────────────────────────────────────

/** How an internal API authenticates its callers, for its OpenAPI document. */
export interface InternalSecurity {
  /** OpenAPI security schemes by name (`{ type: 'apiKey', in: 'header', name: … }`). */
  schemes: Record<string, JsonObject>;
  /** Who may call, in every operation's description. */
  access: string;
}

/**
 * The OpenAPI 3.1 document of an internal service's API (`internal: true`), from its manifest
 * alone: its routes as declared, each answering to any of `security`'s schemes, with none of the
 * gateway's fields (no gateway is in front of it). Never merged into the public document.
 */
export function internalOpenApi(m: RestManifest, info: OpenApiInfo, security: InternalSecurity): JsonObject {
  if (!m.internal) throw new Error(`${m.service}: not an internal REST manifest (its routes are in the public document)`);
  const surface: Surface = {
    security: () => Object.keys(security.schemes).map((name) => ({ [name]: [] })),
    access: () => security.access,
    everyAnswer: { 'X-Request-Id': EVERY_ANSWER_HEADERS['X-Request-Id'] },
    gateway: false,
  };
  return openApiDocument([openApiPart(m, surface)], info, (paths) => ({
    ...usedComponents(paths),
    securitySchemes: security.schemes,
  }));
}
