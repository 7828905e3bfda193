import { z } from 'zod';
import {
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

/**
 * zod → JSON Schema 2020-12 (OpenAPI 3.1's dialect), without the `$schema` line each would repeat
 * and without what only restates a type to a reader: the ±2^53 bounds of every integer, the
 * regular expression behind `format: date-time`.
 */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonObject {
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
  }) as JsonObject;
  const { $schema: _dialect, ...rest } = out;
  return rest;
}

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

function operation(m: RestManifest, route: RestRoute, version: number, v: RestVersion, at: Listed): JsonObject {
  const s = versionSchemas(route, version);
  const notice = v.deprecated ? { ...v.deprecated, sunset: toHttpDate(v.deprecated.sunset)! } : undefined;
  const others = negotiated(route, at);
  const responses = operationResponses(route, others, v, notice);
  const parameters = operationParameters(route, others, s.query);
  if ((s.params || s.query || s.body || parameters.length > 0) && !responses['400']) {
    responses['400'] = withHeaders(errorResponse('Invalid input: the message names the field'), {});
  }
  if (route.auth && !responses['401'])
    responses['401'] = withHeaders(errorResponse('`Token required`, `Invalid token` or `Invalid API key`'), {});
  if (route.auth && !responses['403']) {
    const forbidden = route.scope
      ? `\`Forbidden\`: an API key without scope \`${route.scope}\``
      : '`Forbidden`: any API key (no scope allows this route)';
    responses['403'] = withHeaders(errorResponse(forbidden), {});
  }
  const description = [
    route.description,
    access(route),
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
    security: route.auth ? [{ bearerAuth: [] }, { apiKey: [] }] : [],
    ...(route.auth ? { 'x-halo-api-key-scope': route.scope ?? null } : {}),
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

/** A response with the fields of every answer and `extra` headers. */
const withHeaders = (response: JsonObject, extra: JsonObject): JsonObject => ({
  ...response,
  headers: { ...EVERY_ANSWER_HEADERS, ...extra },
});

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
function operationResponses(route: RestRoute, others: Negotiated, v: RestVersion, notice: Notice): JsonObject {
  const responses: JsonObject = {};
  for (const [status, r] of Object.entries({ ...route.responses, ...v.responses })) {
    const content = responseContent(route, others, status, r);
    responses[status] = withHeaders(
      { description: r.description, ...(content ? { content } : {}) },
      responseHeaders(route, Number(status), r, notice),
    );
  }
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
  const paths: Record<string, Record<string, JsonObject>> = {};
  const add = (r: RestRoute, n: number, v: RestVersion, path: string, at: Listed) => {
    const item = (paths[openApiPath(path)] ??= {});
    const method = r.method.toLowerCase();
    if (item[method]) throw new Error(`OpenAPI: ${r.method} ${openApiPath(path)} is declared twice`);
    item[method] = operation(m, r, n, v, at);
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
    components: usedComponents(paths),
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
