import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Contract } from '@halo/contracts';
import { defaultServiceUrl, EDGE_SERVICE_NAMES, type ServiceName } from '@halo/kit/config';
import { serviceContract } from '@halo/kit/contract';
import type { RestManifest } from '@halo/kit/rest';
import { loadManifests } from './compose-rest';

/**
 * The contracts of this checkout: every service's `schema.graphql` and REST manifest, with the
 * embedded default URL (the gateway overrides it per deployment with <SERVICE>_URL). What
 * `npm run compose` composes and what the subgraph CLI sends by default.
 */
const ROOT = resolve(__dirname, '../..');
export const schemaFile = (name: ServiceName) => resolve(ROOT, 'services', name, 'schema.graphql');

export function checkoutContracts(
  opts: { manifests?: () => RestManifest[]; replaceSdl?: Partial<Record<string, string>> } = {},
): Contract[] {
  const manifests = (opts.manifests ?? loadManifests)();
  return EDGE_SERVICE_NAMES.flatMap((name) => {
    const sdl = opts.replaceSdl?.[name] ?? (existsSync(schemaFile(name)) ? readFileSync(schemaFile(name), 'utf8') : null);
    const manifest = manifests.find((m) => m.service === name);
    if (sdl === null && !manifest) return [];
    return [serviceContract({ service: name, url: defaultServiceUrl(name), sdl, manifest })];
  });
}
