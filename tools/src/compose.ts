import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { composeServices } from '@apollo/composition';
import { defaultServiceUrl, SERVICE_NAMES } from '@halo/kit';
import { parse } from 'graphql';

/**
 * `npm run compose`: composes every service's `schema.graphql` into the supergraph the gateway
 * serves (gateway/supergraph.graphql, committed). `--check` recomposes and fails if the committed
 * file is stale or composition breaks, which is how CI catches a subgraph change nobody composed.
 */
const ROOT = resolve(__dirname, '../..');
export const SUPERGRAPH_FILE = resolve(ROOT, 'gateway/supergraph.graphql');
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
  const result = composeSupergraph();
  const file = relative(process.cwd(), SUPERGRAPH_FILE);
  if ('errors' in result) {
    process.stderr.write(`Composition failed:\n${result.errors.map((e) => `  - ${e}`).join('\n')}\n`);
    process.exit(1);
  }
  if (check) {
    const current = existsSync(SUPERGRAPH_FILE) ? readFileSync(SUPERGRAPH_FILE, 'utf8') : '';
    if (current !== result.sdl) {
      process.stderr.write(`${file} is stale: run \`npm run compose\` and commit the result.\n`);
      process.exit(1);
    }
    process.stdout.write(`${file} is up to date.\n`);
    return;
  }
  writeFileSync(SUPERGRAPH_FILE, result.sdl);
  process.stdout.write(`Wrote ${file}.\n`);
}

if (require.main === module) main();
