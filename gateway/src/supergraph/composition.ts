import { createHash } from 'node:crypto';
import { parseWire, SupergraphAnswer } from '@halo/contracts/wire';
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

/** `GET /v1/supergraph`'s answer (docs/registry.md), as @halo/contracts/wire declares it. */
export type RegistryComposition = SupergraphAnswer;

/** A registry answer checked for shape (the contents are checked by the accept functions); throws naming what it refuses. */
export const parseRegistryComposition = (json: unknown): RegistryComposition => parseWire(SupergraphAnswer, json);

/** A short, stable name for a composition read from files: `file:<12 hex of its supergraph>`. */
export const fileCompositionId = (supergraph: string) => `file:${createHash('sha256').update(supergraph).digest('hex').slice(0, 12)}`;
