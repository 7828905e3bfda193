import { createHash } from 'node:crypto';
import { parse } from 'graphql';
import { prepareSupergraph } from '../auth';
import { acceptOpenApi, type OpenApiBody } from '../docs';
import { readCostDirectives } from '../graphql';
import { createVersioning, parseRouteTable, type Versioning } from '../rest';

/**
 * What the gateway serves, whichever source it came from: the supergraph (as @apollo/gateway
 * loads it), the REST route table (with its versions) and the OpenAPI document. Each `accept…`
 * throws to refuse a version, before anything is swapped, so a bad one never half-applies.
 */

/** The SDL @apollo/gateway loads; throws if the gateway's own policy cannot be read from it. */
export function acceptSupergraph(raw: string): string {
  const { sdl } = prepareSupergraph(raw);
  // OperationPolicy reads these at every load; a supergraph it cannot read must be refused here,
  // or every operation validated against it would fail closed.
  readCostDirectives(parse(sdl));
  return sdl;
}

export function acceptRoutes(text: string): Versioning {
  const table = parseRouteTable(text);
  return createVersioning(table.routes, table);
}

export { acceptOpenApi, type OpenApiBody };

/** `GET /v1/supergraph`'s answer (docs/registry.md). */
export interface RegistryComposition {
  composition: number;
  hash: string;
  createdAt: string;
  supergraph: string;
  routes: unknown;
  openapi: unknown;
  services: Record<string, number>;
}

/** A registry answer checked for shape (the contents are checked by the accept functions). */
export function parseRegistryComposition(json: unknown): RegistryComposition {
  const c = json as Partial<RegistryComposition> | null;
  if (!c || typeof c !== 'object') throw new Error('not a JSON object');
  if (typeof c.composition !== 'number' || !Number.isInteger(c.composition)) throw new Error('composition: not an integer');
  if (typeof c.hash !== 'string' || c.hash === '') throw new Error('hash: missing');
  if (typeof c.supergraph !== 'string') throw new Error('supergraph: not a string');
  if (!c.routes || typeof c.routes !== 'object') throw new Error('routes: not an object');
  if (!c.openapi || typeof c.openapi !== 'object') throw new Error('openapi: not an object');
  return {
    composition: c.composition,
    hash: c.hash,
    createdAt: typeof c.createdAt === 'string' ? c.createdAt : '',
    supergraph: c.supergraph,
    routes: c.routes,
    openapi: c.openapi,
    services: c.services && typeof c.services === 'object' ? c.services : {},
  };
}

/** A short, stable name for a composition read from files: `file:<12 hex of its supergraph>`. */
export const fileCompositionId = (supergraph: string) => `file:${createHash('sha256').update(supergraph).digest('hex').slice(0, 12)}`;
