import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Contract } from '@halo/contracts';
import { EDGE_SERVICE_NAMES } from '@halo/kit/config';
import type { ComposedRouteTable, JsonObject } from '@halo/kit/rest';

/**
 * The committed composed files as contracts (docs/registry.md, "Bootstrap"): each service's
 * `schema.graphql`, its entries of `gateway/routes.json` and its operations of
 * `gateway/openapi.json` (by tag). `urlOf` gives each service's routing URL.
 */
export function bootstrapContracts(root: string, urlOf: (service: string) => string): Contract[] {
  const table = JSON.parse(readFileSync(resolve(root, 'gateway/routes.json'), 'utf8')) as ComposedRouteTable;
  const openapi = JSON.parse(readFileSync(resolve(root, 'gateway/openapi.json'), 'utf8')) as {
    tags: { name: string; description: string }[];
    paths: Record<string, Record<string, JsonObject & { tags?: string[] }>>;
  };
  return EDGE_SERVICE_NAMES.flatMap((service): Contract[] => {
    const file = resolve(root, 'services', service, 'schema.graphql');
    const sdl = existsSync(file) ? readFileSync(file, 'utf8') : null;
    const routes = table.routes.filter((r) => r.service === service);
    const tag = openapi.tags.find((t) => t.name === service);
    const paths: Record<string, Record<string, JsonObject>> = {};
    for (const [path, ops] of Object.entries(openapi.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        if (op.tags?.includes(service)) (paths[path] ??= {})[method] = op;
      }
    }
    const rest = routes.length > 0 && tag ? { routes, openapi: { tag, paths } } : null;
    if (sdl === null && rest === null) return [];
    return [{ service, url: urlOf(service), sdl, rest }];
  });
}

/** `gateway/breaking-changes.json`'s acknowledgements, if the file is there (imported once, then retired). */
export function bootstrapAcknowledgements(
  root: string,
): { service: string; type: string; path: string; message: string; reason: string }[] {
  const file = resolve(root, 'gateway/breaking-changes.json');
  if (!existsSync(file)) return [];
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as {
    acknowledged?: { type: string; path: string; message: string; reason: string }[];
  };
  return (parsed.acknowledged ?? []).map((a) => ({ service: 'unknown', type: a.type, path: a.path, message: a.message, reason: a.reason }));
}
