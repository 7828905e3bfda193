import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, relative, resolve } from 'node:path';
import { composeContracts, composeSupergraphOf, jsonFile } from '@halo/contracts';
import { checkoutContracts } from './checkout-contracts';
import { loadManifests, OPENAPI_FILE, ROUTES_FILE } from './compose-rest';
import { clientScopes, CLIENT_SCOPES_FILE, declaredOperations, loadSubgraphSdls, scopesDoc, SCOPES_DOC_FILE } from './compose-scopes';
import { validateOpenApi } from './openapi-validate';
import { registryOpenApi, REGISTRY_OPENAPI_FILE } from './registry-openapi';
import {
  acknowledge,
  ACKNOWLEDGED_FILE,
  baselineSupergraph,
  breakingChanges,
  describeChanges,
  readAcknowledged,
  unacknowledged,
} from './schema-changes';

/**
 * `npm run compose`: composes what the services declare in their own folders into the files the
 * gateway serves, all committed: every `schema.graphql` into the supergraph
 * (gateway/supergraph.graphql), every REST manifest into the route table and the OpenAPI document
 * (gateway/routes.json, gateway/openapi.json; src/compose-rest.ts) — all through
 * `composeContracts` of @halo/contracts, the registry's own code. `--check` recomposes and fails
 * if a committed file is stale or composition breaks, which is how CI catches a change nobody composed.
 * Both refuse a supergraph that breaks clients of the committed one (src/schema-changes.ts) unless
 * the change is acknowledged: `--acknowledge-breaking "<reason>"` records it.
 */
const ROOT = resolve(__dirname, '../..');
export const SUPERGRAPH_FILE = resolve(ROOT, 'gateway/supergraph.graphql');
/** Where the chart (helm/halo) keeps its copies of the composed files. */
export const CHART_FILES_DIR = resolve(ROOT, 'helm/halo/files');

/**
 * Composes every service's `schema.graphql` (through @halo/contracts, as the registry does);
 * `replace` stands in for some of them (tests).
 */
export function composeSupergraph(replace: Partial<Record<string, string>> = {}): { sdl: string } | { errors: string[] } {
  let contracts;
  try {
    // Only the subgraphs matter here: no REST manifest is loaded.
    contracts = checkoutContracts({ manifests: () => [], replaceSdl: replace });
  } catch (err) {
    return { errors: [(err as Error).message] };
  }
  return composeSupergraphOf(contracts);
}

/** The value after `flag` on the command line, if the flag is there. */
function option(flag: string): string | undefined {
  const i = process.argv.indexOf(flag);
  return i === -1 ? undefined : (process.argv[i + 1] ?? '');
}

/**
 * Refuses (exit 1) a supergraph with breaking changes nobody acknowledged, comparing it with the
 * baseline: the committed file, or the one at SCHEMA_BASE_REF (`--base <ref>`). With `reason`,
 * the changes are acknowledged instead.
 */
async function guardBreakingChanges(next: string, reason: string | undefined): Promise<void> {
  const baseline = baselineSupergraph(SUPERGRAPH_FILE, option('--base') ?? process.env.SCHEMA_BASE_REF);
  if (!baseline) return;
  const breaking = await breakingChanges(baseline.sdl, next);
  const open = unacknowledged(breaking, readAcknowledged());
  if (open.length === 0) return;
  if (reason) {
    acknowledge(open, reason);
    process.stdout.write(
      `Acknowledged ${open.length} breaking change(s) in ${relative(process.cwd(), ACKNOWLEDGED_FILE)}:\n${describeChanges(open)}\n`,
    );
    return;
  }
  process.stderr.write(
    `The supergraph breaks clients of ${baseline.from}:\n${describeChanges(open)}\n` +
      'Keep the old fields (deprecate them first), or, if the break is intended and its clients are ready, run\n' +
      '  npm run compose -- --acknowledge-breaking "<why, and who was told>"\n' +
      `and commit ${relative(process.cwd(), ACKNOWLEDGED_FILE)} with the supergraph (README "GraphQL at the edge").\n`,
  );
  process.exit(1);
}

async function main(): Promise<void> {
  const check = process.argv.includes('--check');
  const reason = option('--acknowledge-breaking');
  if (reason === '') {
    process.stderr.write('--acknowledge-breaking needs a reason: --acknowledge-breaking "<why, and who was told>"\n');
    process.exit(1);
  }
  const version = (JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  const result = composeContracts(checkoutContracts(), { version });
  if (!result.ok) {
    const { composition, rest } = result.errors;
    const failed = [
      ...(composition.length ? [`Composition failed:\n${composition.map((e) => `  - ${e}`).join('\n')}`] : []),
      ...(rest.length ? [`REST composition failed:\n${rest.map((e) => `  - ${e}`).join('\n')}`] : []),
    ];
    process.stderr.write(`${failed.join('\n')}\n`);
    process.exit(1);
  }
  const { supergraph: sdl, routes, openapi } = result.composition;
  const validation = validateOpenApi(openapi);
  if (!validation.valid) {
    process.stderr.write(
      `REST composition failed:\n  - gateway/openapi.json is not valid OpenAPI 3.1: ${JSON.stringify(validation.errors)}\n`,
    );
    process.exit(1);
  }
  const supergraph = { sdl };
  const rest = { routes: jsonFile(routes), openapi: jsonFile(openapi) };
  await guardBreakingChanges(supergraph.sdl, check ? undefined : reason);
  const composed: [string, string][] = [
    [SUPERGRAPH_FILE, supergraph.sdl],
    [ROUTES_FILE, rest.routes],
    [OPENAPI_FILE, rest.openapi],
  ];
  // What API keys may do, from the same declarations: the docs page and the SDK's scope list.
  const operations = declaredOperations(loadManifests(), loadSubgraphSdls());
  // The Helm chart ships the same files (its ConfigMap's defaults), so a release never lags the code.
  const outputs = [
    ...composed,
    ...composed.map(([path, content]): [string, string] => [resolve(CHART_FILES_DIR, basename(path)), content]),
    [SCOPES_DOC_FILE, scopesDoc(operations)],
    [CLIENT_SCOPES_FILE, clientScopes(operations)],
    // The registry's internal API, documented on its own: never part of the gateway's files above.
    [REGISTRY_OPENAPI_FILE, registryOpenApi()],
  ] as [string, string][];
  if (check) {
    const stale = outputs.filter(([path, content]) => (existsSync(path) ? readFileSync(path, 'utf8') : '') !== content);
    for (const [path] of stale)
      process.stderr.write(`${relative(process.cwd(), path)} is stale: run \`npm run compose\` and commit the result.\n`);
    if (stale.length > 0) process.exit(1);
    for (const [path] of outputs) process.stdout.write(`${relative(process.cwd(), path)} is up to date.\n`);
    return;
  }
  for (const [path, content] of outputs) {
    writeFileSync(path, content);
    process.stdout.write(`Wrote ${relative(process.cwd(), path)}.\n`);
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
