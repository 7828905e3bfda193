import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, relative, resolve } from 'node:path';
import { composeServices } from '@apollo/composition';
import { defaultServiceUrl, SERVICE_NAMES } from '@halo/kit';
import { parse } from 'graphql';
import { composeRest, OPENAPI_FILE, ROUTES_FILE } from './compose-rest';

/**
 * `npm run compose`: composes what the services declare in their own folders into the files the
 * gateway serves, all committed: every `schema.graphql` into the supergraph
 * (gateway/supergraph.graphql), every REST manifest into the route table and the OpenAPI document
 * (gateway/routes.json, gateway/openapi.json; src/compose-rest.ts). `--check` recomposes and fails
 * if a committed file is stale or composition breaks, which is how CI catches a change nobody composed.
 */
const ROOT = resolve(__dirname, '../..');
export const SUPERGRAPH_FILE = resolve(ROOT, 'gateway/supergraph.graphql');
/** Where the chart (helm/halo) keeps its copies of the composed files. */
export const CHART_FILES_DIR = resolve(ROOT, 'helm/halo/files');
const HEADER = '# Composed by `npm run compose` from services/*/schema.graphql. Do not edit by hand.\n';

export function composeSupergraph(): { sdl: string } | { errors: string[] } {
  const subgraphs = SERVICE_NAMES.map((name) => ({ name, file: resolve(ROOT, 'services', name, 'schema.graphql') }))
    .filter((s) => existsSync(s.file))
    .map((s) => ({
      name: s.name,
      // The gateway overrides these per deployment with <SERVICE>_URL; they are the embedded defaults.
      url: `${defaultServiceUrl(s.name)}/graphql`,
      typeDefs: parse(readFileSync(s.file, 'utf8')),
    }));
  const result = composeServices(subgraphs);
  if (result.errors) return { errors: result.errors.map((e) => e.message) };
  return { sdl: HEADER + result.supergraphSdl + '\n' };
}

function main(): void {
  const check = process.argv.includes('--check');
  const supergraph = composeSupergraph();
  const rest = composeRest();
  const failed = [
    ...('errors' in supergraph ? [`Composition failed:\n${supergraph.errors.map((e) => `  - ${e}`).join('\n')}`] : []),
    ...('errors' in rest ? [`REST composition failed:\n${rest.errors.map((e) => `  - ${e}`).join('\n')}`] : []),
  ];
  if ('errors' in supergraph || 'errors' in rest) {
    process.stderr.write(`${failed.join('\n')}\n`);
    process.exit(1);
  }
  const composed: [string, string][] = [
    [SUPERGRAPH_FILE, supergraph.sdl],
    [ROUTES_FILE, rest.routes],
    [OPENAPI_FILE, rest.openapi],
  ];
  // The Helm chart ships the same files (its ConfigMap's defaults), so a release never lags the code.
  const outputs = [...composed, ...composed.map(([path, content]): [string, string] => [resolve(CHART_FILES_DIR, basename(path)), content])];
  if (check) {
    const stale = outputs.filter(([path, content]) => (existsSync(path) ? readFileSync(path, 'utf8') : '') !== content);
    for (const [path] of stale) process.stderr.write(`${relative(process.cwd(), path)} is stale: run \`npm run compose\` and commit the result.\n`);
    if (stale.length > 0) process.exit(1);
    for (const [path] of outputs) process.stdout.write(`${relative(process.cwd(), path)} is up to date.\n`);
    return;
  }
  for (const [path, content] of outputs) {
    writeFileSync(path, content);
    process.stdout.write(`Wrote ${relative(process.cwd(), path)}.\n`);
  }
}

if (require.main === module) main();
