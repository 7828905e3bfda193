import { badRequest } from '@halo/kit/errors';
import { defineRestManifest, ruleParsed, type RestHandlers, type RestResponse } from '@halo/kit/rest';
import {
  CheckAnswer,
  CheckDetailAnswer,
  CheckRequest,
  ChecksAnswer,
  CLIENT_NAME,
  ClientsAnswer,
  ClientVersionAnswer,
  CoordinateUsageAnswer,
  DiffAnswer,
  GatewaysAnswer,
  PublishAnswer,
  PushAnswer,
  PushRefusedAnswer,
  PushRequest,
  RefusedAnswer,
  RetireAnswer,
  RetireRequest,
  RollbackRequest,
  ServicesAnswer,
  SupergraphAnswer,
  TopOperationsAnswer,
  UsageAnswer,
  UsageClientsAnswer,
  UsageRequest,
  UsageSeriesAnswer,
  VersionAnswer,
  VersionsAnswer,
  ActiveOperationsAnswer,
} from '@halo/contracts/wire';
import { z } from 'zod';
import { serviceFrom, wholeNumber } from '../domain/insight';
import { checkRequestFrom, rollbackRequestFrom, versionNumber } from '../domain/requests';

/**
 * The registry's HTTP API (docs/registry.md, "Registry HTTP API"): what the gateway polls and
 * reports to, what `npm run subgraph` and `npm run operations` call and what the Studio reads.
 * Internal: the gateway never routes to it, so it is not in gateway/routes.json nor
 * gateway/openapi.json; `npm run compose` writes its own document, docs/api/registry.openapi.json.
 * Requests and answers are @halo/contracts/wire's schemas, which the gateway and the CLIs read
 * too. Every field is read by the registry's own rules, so a 400 reads as it always has; every
 * route says who may call it in an `authorize` step (routes.ts), before its input is read.
 */

/**
 * A body read by `schema`, the first field it refuses named `<field> is invalid` (`body is
 * invalid` for no JSON object at all): the wording of the registry's write bodies.
 */
const firstInvalid =
  <T>(schema: z.ZodType<T>) =>
  (raw: unknown): T => {
    const result = schema.safeParse(raw);
    if (result.success) return result.data;
    const issue = result.error.issues[0]!;
    throw badRequest(`${issue.path.map(String).join('.') || 'body'} is invalid`);
  };

/**
 * A query or path parameter as a number for the domain, which validates its range (some ranges
 * are configuration): absent → undefined (the domain's default), anything but digits → NaN (which
 * the domain refuses, 400 naming the parameter).
 */
const numberOf = (value: unknown): number | undefined => {
  if (value === undefined) return undefined;
  return typeof value === 'string' && /^\d{1,16}$/.test(value) ? Number(value) : NaN;
};
const queryNumber = (description: string) => ruleParsed(numberOf, { type: 'integer', minimum: 1, description }).optional();

/** A query parameter's text; given twice (`?coordinate=a&coordinate=b`) it is a list, passed on as its JSON text for the domain to refuse, naming it. */
const queryText = (description: string, schema: Record<string, unknown> = {}) =>
  ruleParsed((v): string | undefined => (v === undefined || typeof v === 'string' ? v : JSON.stringify(v)), {
    type: 'string',
    ...schema,
    description,
  }).optional();

const days = queryNumber(
  'The window: requests in the last `days` × 24 h (default the check window, REGISTRY_USAGE_WINDOW_DAYS; at most the usage kept, REGISTRY_USAGE_RETENTION_DAYS)',
);
const version = (name: string, description: string) =>
  ruleParsed(versionNumber(name), { type: 'integer', minimum: 1, maximum: 999_999_999, description });
const service = z.object({ service: z.string().meta({ description: 'A service name (`catalog`)' }) });

const NOT_COMPOSED = { description: '`Nothing composed yet`' };
const REFUSED: RestResponse = { description: '`Check failed`, with the report', schema: RefusedAnswer };
const FORBIDDEN: RestResponse = { description: '`Forbidden`: the caller may not do this (or not for this service or client)' };
const UNAUTHENTICATED: RestResponse = {
  description: '`Token required` (no credentials), `Invalid token` (a bad, expired or spent token, or an unknown API key)',
};
const SPENT = {
  description:
    '`Token required`, or `Invalid token`: also a signed token sent a second time (each write spends its token, docs/registry.md, "Authentication")',
};
const NOT_FOUND = (what: string): RestResponse => ({ description: what });
const publishAnswers = {
  200: { description: 'Unchanged: the contract is already the current version', schema: PublishAnswer },
  201: { description: 'Published: a new version and composition', schema: PublishAnswer },
  401: SPENT,
  403: FORBIDDEN,
  422: REFUSED,
} satisfies Record<number, RestResponse>;

export const restManifest = defineRestManifest({
  service: 'registry',
  internal: true,
  description: 'The schema registry: contracts published, checked and composed; usage; client operation lists',
  routes: [
    {
      id: 'getSupergraph',
      method: 'GET',
      path: '/v1/supergraph',
      summary: 'The latest composition (what gateways poll)',
      description:
        'Conditional with `If-None-Match` (the ETag is the composition hash): 304 while it is current. A gateway names itself in `x-halo-gateway-id`, so `GET /v1/gateways` shows what each serves.',
      responses: {
        200: { description: 'The composition, its `ETag` the hash', schema: SupergraphAnswer },
        304: { description: 'The composition named by `If-None-Match` is still the latest' },
        401: UNAUTHENTICATED,
        404: NOT_COMPOSED,
      },
    },
    {
      id: 'checkContract',
      method: 'POST',
      path: '/v1/check',
      summary: "Compose a contract with every other service's current one: its changes and their usage",
      description: 'Changes nothing but the check’s own record (`GET /v1/checks`). A failed check is a 200 with `ok: false`.',
      body: ruleParsed(checkRequestFrom, CheckRequest),
      responses: { 200: { description: 'The check report', schema: CheckAnswer }, 401: UNAUTHENTICATED, 403: FORBIDDEN },
    },
    {
      id: 'publishContract',
      method: 'POST',
      path: '/v1/publish',
      summary: "Check, then make the contract the service's current version",
      body: ruleParsed(checkRequestFrom, CheckRequest),
      responses: publishAnswers,
    },
    {
      id: 'rollBack',
      method: 'POST',
      path: '/v1/rollback',
      summary: "Republish an earlier version's contract as a new version, after the same checks",
      body: ruleParsed(rollbackRequestFrom, RollbackRequest),
      responses: { ...publishAnswers, 404: NOT_FOUND('`<service> has no version <to>`') },
    },
    {
      id: 'listServices',
      method: 'GET',
      path: '/v1/services',
      summary: "The services' current versions",
      responses: { 200: { description: 'Each service, by name', schema: ServicesAnswer }, 401: UNAUTHENTICATED },
    },
    {
      id: 'listVersions',
      method: 'GET',
      path: '/v1/services/:service/versions',
      summary: "A service's history, newest first",
      params: service,
      responses: { 200: { description: 'Each version: who, when, what it changed, why', schema: VersionsAnswer }, 401: UNAUTHENTICATED },
    },
    {
      id: 'getVersion',
      method: 'GET',
      path: '/v1/services/:service/versions/:version',
      summary: 'One version of a service, its contract whole',
      params: service.extend({ version: version('version', 'The version number') }),
      responses: {
        200: { description: 'The version', schema: VersionAnswer },
        400: { description: '`version must be a version number`' },
        401: UNAUTHENTICATED,
        404: NOT_FOUND('`<service> has no version <version>`'),
      },
    },
    {
      id: 'diffVersions',
      method: 'GET',
      path: '/v1/services/:service/diff',
      summary: 'What changes between two versions of a service: the change list, then a text diff',
      params: service,
      query: z.object({ from: version('from', 'The version compared from'), to: version('to', 'The version compared to') }),
      responses: {
        200: { description: 'The changes and the unified diff', schema: DiffAnswer },
        400: { description: '`from must be a version number`, `to must be a version number`' },
        401: UNAUTHENTICATED,
        404: NOT_FOUND('`<service> has no version <n>`'),
      },
    },
    {
      id: 'listChecks',
      method: 'GET',
      path: '/v1/checks',
      summary: 'The latest checks, publishes and rollbacks, newest first',
      query: z.object({
        limit: ruleParsed((v) => wholeNumber('limit', numberOf(v), 50, 1, 200), {
          type: 'integer',
          minimum: 1,
          maximum: 200,
          default: 50,
          description: 'How many',
        }).optional(),
        service: ruleParsed(serviceFrom, { type: 'string', minLength: 1, maxLength: 100, description: 'Only this service’s' }).optional(),
      }),
      responses: { 200: { description: 'The checks', schema: ChecksAnswer }, 401: UNAUTHENTICATED },
    },
    {
      id: 'getCheck',
      method: 'GET',
      path: '/v1/checks/:id',
      summary: 'One check whole, its report as answered',
      params: z.object({
        id: ruleParsed((v) => wholeNumber('id', numberOf(v) ?? NaN, 0, 1, Number.MAX_SAFE_INTEGER), {
          type: 'integer',
          minimum: 1,
          description: 'The check’s id',
        }),
      }),
      responses: {
        200: { description: 'The check', schema: CheckDetailAnswer },
        401: UNAUTHENTICATED,
        404: NOT_FOUND('`No check <id>` (none, or pruned with the usage it was decided on)'),
      },
    },
    {
      id: 'reportUsage',
      method: 'POST',
      path: '/v1/usage',
      summary: 'A gateway’s usage report: operations counted per hour, client and client version',
      description: 'The gateway’s service token only.',
      body: ruleParsed(firstInvalid(UsageRequest), UsageRequest),
      responses: {
        202: { description: 'Taken', schema: UsageAnswer },
        400: { description: '`<field> is invalid`' },
        401: UNAUTHENTICATED,
        403: FORBIDDEN,
      },
    },
    {
      id: 'usageByCoordinate',
      method: 'GET',
      path: '/v1/usage/coordinates',
      summary: 'Requests per schema coordinate in the window',
      query: z.object({ days }),
      responses: { 200: { description: 'Busiest first', schema: CoordinateUsageAnswer }, 401: UNAUTHENTICATED },
    },
    {
      id: 'usageSeries',
      method: 'GET',
      path: '/v1/usage/series',
      summary: "One coordinate's requests per hour and client version, and the operations that used it",
      query: z.object({
        coordinate: queryText('`Type`, `Type.field`, `Type.field.arg` or `Enum.VALUE`', { maxLength: 300 }),
        days,
      }),
      responses: { 200: { description: 'Every hour of the window, zero-filled', schema: UsageSeriesAnswer }, 401: UNAUTHENTICATED },
    },
    {
      id: 'topOperations',
      method: 'GET',
      path: '/v1/usage/operations',
      summary: 'The top operations of the window',
      query: z.object({
        days,
        limit: queryNumber('How many: 1 to 200, default 50'),
        by: queryText('By `requests` (the default), estimated `cost` per request, or `totalCost`', {
          enum: ['requests', 'cost', 'totalCost'],
        }),
      }),
      responses: { 200: { description: 'The operations', schema: TopOperationsAnswer }, 401: UNAUTHENTICATED },
    },
    {
      id: 'usageClients',
      method: 'GET',
      path: '/v1/usage/clients',
      summary: 'Requests per client version in the window, busiest first',
      query: z.object({ days }),
      responses: { 200: { description: 'The client versions', schema: UsageClientsAnswer }, 401: UNAUTHENTICATED },
    },
    {
      id: 'listGateways',
      method: 'GET',
      path: '/v1/gateways',
      summary: 'The gateways polling, and the composition each serves',
      responses: { 200: { description: 'By id', schema: GatewaysAnswer }, 401: UNAUTHENTICATED },
    },
    {
      id: 'listClientVersions',
      method: 'GET',
      path: '/v1/operations',
      summary: "Every client version's operation list, counted (of one client)",
      query: z.object({ client: z.string().regex(CLIENT_NAME).optional().meta({ description: 'Only this client’s' }) }),
      responses: { 200: { description: 'By client, newest push first', schema: ClientsAnswer }, 401: UNAUTHENTICATED },
    },
    {
      id: 'pushOperations',
      method: 'POST',
      path: '/v1/operations',
      summary: "Push a client version's operations, each validated against the current API schema",
      description: 'The whole list: it replaces the version’s list before it. Nothing is stored when any operation is refused.',
      body: ruleParsed(firstInvalid(PushRequest), PushRequest),
      responses: {
        200: { description: 'Unchanged: the same list as before', schema: PushAnswer },
        201: { description: 'Stored: what it added and removed', schema: PushAnswer },
        400: { description: '`<field> is invalid`, or `<n> of <m> operations refused` with each and why', schema: PushRefusedAnswer },
        401: SPENT,
        403: FORBIDDEN,
        409: { description: '`<client> <version> is retired`, or `Nothing composed yet: …`' },
      },
    },
    // Before `/v1/operations/:client/:version` (a client named `active` is read there, with its version).
    {
      id: 'activeOperations',
      method: 'GET',
      path: '/v1/operations/active',
      summary: 'Every operation of every active client version (what gateways poll)',
      description: 'Conditional with `If-None-Match` (a strong ETag of the answer’s bytes): 304 while nothing changed.',
      responses: {
        200: { description: 'The feed', schema: ActiveOperationsAnswer },
        304: { description: 'The feed named by `If-None-Match` is current' },
        401: UNAUTHENTICATED,
      },
    },
    {
      id: 'retireClientVersion',
      method: 'POST',
      path: '/v1/operations/retire',
      summary: 'Retire a client version: it no longer blocks checks, and takes no pushes',
      body: ruleParsed(firstInvalid(RetireRequest), RetireRequest),
      responses: {
        200: { description: 'Retired (the first retirement stays)', schema: RetireAnswer },
        400: { description: '`<field> is invalid`' },
        401: SPENT,
        403: FORBIDDEN,
        404: NOT_FOUND('`No operations registered for <client> <version>`'),
      },
    },
    {
      id: 'getClientVersion',
      method: 'GET',
      path: '/v1/operations/:client/:version',
      summary: "One client version's operation list whole",
      description: 'A client name holding `/` or `@` is sent percent-encoded (`%40halo%2Fclient`): one segment.',
      params: z.object({ client: z.string(), version: z.string() }),
      responses: {
        200: { description: 'The list', schema: ClientVersionAnswer },
        401: UNAUTHENTICATED,
        404: NOT_FOUND('`No operations registered for <client> <version>`'),
      },
    },
  ],
});

export type RegistryManifest = typeof restManifest;

/** The registry's handlers, by route of its manifest; each group in its own file (`routes.ts`, `operation-routes.ts`). */
export type RegistryHandlers = RestHandlers<RegistryManifest>;
