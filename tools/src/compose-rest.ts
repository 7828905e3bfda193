import { existsSync, readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { composeRestOf, jsonFile } from '@halo/contracts';
import { defaultServiceUrl, EDGE_SERVICE_NAMES, type ServiceName } from '@halo/kit/config';
import { serviceContract } from '@halo/kit/contract';
import { isEdgeManifest, type RestManifest } from '@halo/kit/rest';
import { validateOpenApi } from './openapi-validate';

/**
 * The REST half of `npm run compose`: every service's route manifest (services/<svc>/src/rest/
 * manifest.ts, loaded from its build output without starting the service; `npm run compose`
 * builds first) becomes the gateway's route table (gateway/routes.json) and one OpenAPI 3.1
 * document (gateway/openapi.json), merged by @halo/contracts (the registry's own code).
 */
const ROOT = resolve(__dirname, '../..');
export const ROUTES_FILE = resolve(ROOT, 'gateway/routes.json');
export const OPENAPI_FILE = resolve(ROOT, 'gateway/openapi.json');

export const manifestSource = (name: ServiceName) => resolve(ROOT, 'services', name, 'src/rest/manifest.ts');
export const manifestBuild = (name: ServiceName) => resolve(ROOT, 'services', name, 'dist/rest/manifest.js');

const isManifest = (m: unknown): m is RestManifest =>
  typeof m === 'object' && m !== null && typeof (m as RestManifest).service === 'string' && Array.isArray((m as RestManifest).routes);

/**
 * Every edge service that declares REST routes, from its built manifest (`npm run compose` builds
 * first, with tsc -b). Tests, which run TypeScript, pass `manifestSource` to load the sources. An
 * internal service's manifest (the registry's) is never part of the edge: the gateway must not
 * route to it (its own document is registry-openapi.ts's).
 */
export function loadManifests(file: (name: ServiceName) => string = manifestBuild): RestManifest[] {
  const manifests: RestManifest[] = [];
  for (const name of EDGE_SERVICE_NAMES) {
    const source = manifestSource(name);
    if (!existsSync(source)) continue;
    const modulePath = file(name);
    if (!existsSync(modulePath)) throw new Error(`${relative(ROOT, modulePath)} is missing: run \`npm run build\` first`);
    // A plain module of schemas: loading it starts nothing.
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the path is only known at run time
    const loaded: unknown = (require(modulePath) as { restManifest?: unknown }).restManifest;
    if (!isManifest(loaded)) throw new Error(`${relative(ROOT, source)} must export \`restManifest\` (defineRestManifest)`);
    if (loaded.service !== name) throw new Error(`${relative(ROOT, source)} declares service ${loaded.service}, not ${name}`);
    if (!isEdgeManifest(loaded)) throw new Error(`${relative(ROOT, source)}: an edge service's manifest cannot be internal`);
    manifests.push(loaded);
  }
  return manifests;
}

/** The two files' contents, or why they cannot be composed (an invalid OpenAPI document included). */
export function composeRest(manifests: () => RestManifest[] = loadManifests): { routes: string; openapi: string } | { errors: string[] } {
  try {
    const contracts = manifests().map((manifest) =>
      serviceContract({ service: manifest.service, url: defaultServiceUrl(manifest.service), manifest }),
    );
    const version = (JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    const rest = composeRestOf(contracts, version);
    if ('errors' in rest) return rest;
    const validation = validateOpenApi(rest.openapi);
    if (!validation.valid) return { errors: [`gateway/openapi.json is not valid OpenAPI 3.1: ${JSON.stringify(validation.errors)}`] };
    return { routes: jsonFile(rest.routes), openapi: jsonFile(rest.openapi) };
  } catch (err) {
    return { errors: [(err as Error).message] };
  }
}
