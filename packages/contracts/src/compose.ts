import { composeServices } from '@apollo/composition';
import { SERVICE_NAMES } from '@halo/kit/config';
import { mergeOpenApi, mergeRouteTable, type ComposedRouteTable, type JsonObject } from '@halo/kit/rest';
import { GraphQLError, parse } from 'graphql';
import type { Contract } from './contract';

/**
 * Composition of every service's current contract: one supergraph (@apollo/composition), one route
 * table and one OpenAPI document. `npm run compose` and the registry both call `composeContracts`,
 * so the committed files and what the registry serves come from the same code, byte for byte.
 */
export const SUPERGRAPH_HEADER = '# Composed by `npm run compose` from services/*/schema.graphql. Do not edit by hand.\n';
export const REST_COMMENT = 'Composed by `npm run compose` from services/*/src/rest/manifest.ts. Do not edit by hand.';

const INFO_DESCRIPTION = `Every REST route of Halo, composed from the services' own manifests. The same
address serves GraphQL at \`/graphql\`.

**Versions.** Unversioned paths are version 1. Version N of a route that has several is
\`/api/vN/<path>\` (each listed here, \`/api/v1/<path>\` included), or the unversioned path with
\`Accept: application/vnd.halo.vN+json\` or \`?version=N\`, which answers as that media type. An
unknown version is 400 \`Unsupported API version\`. A deprecated version answers with
\`Deprecation\`, \`Sunset\` and \`Link: <guide>; rel="successor-version"\`.

**Errors.** Every error is \`{"error": "<message>"}\`; a validation error names the field
(\`name is required\`). Unknown route 404, wrong method 405 with \`Allow\`, malformed JSON 400, a body
over the limit 413.

**Limits.** Every route is rate-limited per caller: \`RateLimit\` and \`RateLimit-Policy\` on every
answer, 429 \`Too many requests\` with \`Retry-After\` (README "Limits"). A service's own 429 (login's
\`Too many attempts\`) is another limit: \`Retry-After\` only, none of the gateway's fields.`;

/** Who answers for the API: the maintainers, reached as CONTRIBUTING.md says. */
export const INFO_CONTACT = { name: 'Halo maintainers (see CONTRIBUTING.md)' };
/** The repository's licence (the root package.json), as an SPDX identifier. */
export const INFO_LICENSE = { name: 'Apache License 2.0', identifier: 'Apache-2.0' };

/** The version the OpenAPI document states: Halo's (the root package.json), passed by the caller. */
export const DEFAULT_API_VERSION = '0.1.0';

export interface Composition {
  /** The supergraph SDL, with the header line `npm run compose` writes. */
  supergraph: string;
  routes: ComposedRouteTable;
  openapi: JsonObject;
}

export type CompositionResult = { ok: true; composition: Composition } | { ok: false; errors: { composition: string[]; rest: string[] } };

/** Services in topology order (then by name), so the output never depends on the caller's order. */
const byTopology = (a: Contract, b: Contract) => {
  const ia = SERVICE_NAMES.indexOf(a.service);
  const ib = SERVICE_NAMES.indexOf(b.service);
  return ia - ib || a.service.localeCompare(b.service);
};

/** A schema that does not parse, named by service, line and column (graphql-js's own location). */
function syntaxError(service: string, err: unknown): string {
  const loc = err instanceof GraphQLError ? err.locations?.[0] : undefined;
  return `${service}: ${(err as Error).message}${loc ? ` (schema line ${loc.line}, column ${loc.column})` : ''}`;
}

/** The supergraph of the contracts that have a subgraph, or why they do not compose. */
export function composeSupergraphOf(contracts: readonly Contract[]): { sdl: string } | { errors: string[] } {
  const withSdl = [...contracts].filter((c) => c.sdl !== null).sort(byTopology);
  if (withSdl.length === 0) return { errors: ['No service has a subgraph'] };
  const subgraphs = [];
  for (const c of withSdl) {
    try {
      subgraphs.push({ name: c.service, url: `${c.url}/graphql`, typeDefs: parse(c.sdl!) });
    } catch (err) {
      return { errors: [syntaxError(c.service, err)] };
    }
  }
  const result = composeServices(subgraphs);
  if (result.errors) return { errors: result.errors.map((e) => e.message) };
  return { sdl: SUPERGRAPH_HEADER + result.supergraphSdl + '\n' };
}

/** The route table and OpenAPI document of the contracts' REST parts, or why they collide. */
export function composeRestOf(
  contracts: readonly Contract[],
  version = DEFAULT_API_VERSION,
): { routes: ComposedRouteTable; openapi: JsonObject } | { errors: string[] } {
  const parts = [...contracts].sort(byTopology).flatMap((c) => (c.rest ? [c.rest] : []));
  try {
    const routes = mergeRouteTable(
      parts.map((p) => p.routes),
      REST_COMMENT,
    );
    const openapi = {
      ...mergeOpenApi(
        parts.map((p) => p.openapi),
        { title: 'Halo API', version, description: INFO_DESCRIPTION, contact: INFO_CONTACT, license: INFO_LICENSE },
      ),
      'x-composed-by': REST_COMMENT,
    };
    return { routes, openapi };
  } catch (err) {
    return { errors: [(err as Error).message] };
  }
}

/** Every contract composed; a failure names what failed on which side (GraphQL, REST). */
export function composeContracts(contracts: readonly Contract[], opts: { version?: string } = {}): CompositionResult {
  const names = new Set<string>();
  for (const c of contracts) {
    if (names.has(c.service)) return { ok: false, errors: { composition: [`${c.service} has two contracts`], rest: [] } };
    names.add(c.service);
  }
  const graph = composeSupergraphOf(contracts);
  const rest = composeRestOf(contracts, opts.version);
  if ('errors' in graph || 'errors' in rest) {
    return { ok: false, errors: { composition: 'errors' in graph ? graph.errors : [], rest: 'errors' in rest ? rest.errors : [] } };
  }
  return { ok: true, composition: { supergraph: graph.sdl, routes: rest.routes, openapi: rest.openapi } };
}

/** A composed JSON file's text, as `npm run compose` commits it. */
export const jsonFile = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;
