import { existsSync, readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { INFO_CONTACT, INFO_LICENSE, jsonFile } from '@halo/contracts';
import { SERVICE_TOKEN_HEADER } from '@halo/kit/contract';
import { internalOpenApi, type RestManifest } from '@halo/kit/rest';
import { manifestBuild } from './compose-rest';
import { validateOpenApi } from './openapi-validate';

/**
 * The OpenAPI 3.1 document of the registry's internal HTTP API (docs/api/registry.openapi.json),
 * from its REST manifest (services/registry/src/rest/manifest.ts) — the API the gateway, the CLIs
 * and the Studio call. Apart from the public edge: the gateway never routes to the registry, so
 * its manifest is in neither gateway/routes.json nor gateway/openapi.json. Written by `npm run
 * compose` (compose.ts), checked by `npm run compose:check`, linted like the public document
 * (registry-openapi.test.ts).
 */
const ROOT = resolve(__dirname, '../..');
export const REGISTRY_OPENAPI_FILE = resolve(ROOT, 'docs/api/registry.openapi.json');

/** The registry's manifest, from its build (`npm run compose` builds first); tests pass the source. */
export function loadRegistryManifest(file = manifestBuild('registry')): RestManifest {
  if (!existsSync(file)) throw new Error(`${relative(ROOT, file)} is missing: run \`npm run build\` first`);
  // A plain module of schemas: loading it starts nothing.
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the path is only known at run time
  const loaded = (require(file) as { restManifest?: RestManifest }).restManifest;
  if (!loaded?.internal || loaded.service !== 'registry')
    throw new Error(`${relative(ROOT, file)} must export the registry's internal \`restManifest\``);
  return loaded;
}

const DESCRIPTION = `The schema registry's HTTP API (docs/registry.md): what gateways poll and report to, what
\`npm run subgraph\` and \`npm run operations\` call, what the Studio reads. Internal: the gateway does not
route to it; call the registry directly (REGISTRY_URL). Requests and answers are declared once, in
\`@halo/contracts/wire\`. In development only, a caller on loopback without credentials may read and check.`;

/** The registry's document as committed (sorted, two-space JSON, a final newline). */
export function registryOpenApi(manifest: RestManifest = loadRegistryManifest()): string {
  const version = (JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  const doc = internalOpenApi(
    manifest,
    { title: 'Halo schema registry (internal)', version, description: DESCRIPTION, contact: INFO_CONTACT, license: INFO_LICENSE },
    {
      schemes: {
        serviceToken: {
          type: 'apiKey',
          in: 'header',
          name: SERVICE_TOKEN_HEADER,
          description: "A service's own token (`aud: registry`, single use for a write), or npm start's developer token",
        },
        apiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'X-API-Key',
          description: 'An admin API key with `schema:write[:<service>]`, `schema:read` or `operations:write[:<client>]`',
        },
      },
      access:
        'Needs a service token or an admin API key (docs/registry.md, "Authentication"); who may do what is answered before the request is read.',
    },
  );
  const validation = validateOpenApi(doc);
  if (!validation.valid) throw new Error(`docs/api/registry.openapi.json is not valid OpenAPI 3.1: ${JSON.stringify(validation.errors)}`);
  return jsonFile(doc);
}
