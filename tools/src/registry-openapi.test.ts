import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadManifests, manifestSource, OPENAPI_FILE, ROUTES_FILE } from './compose-rest';
import { loadRegistryManifest, registryOpenApi, REGISTRY_OPENAPI_FILE } from './registry-openapi';

/**
 * The registry's internal API document (docs/api/registry.openapi.json): what its manifest
 * generates, linted as the public document is, and never part of the public edge.
 */
const committed = readFileSync(REGISTRY_OPENAPI_FILE, 'utf8');
const manifest = () => loadRegistryManifest(manifestSource('registry'));

it('docs/api/registry.openapi.json is what the registry’s manifest generates (valid OpenAPI 3.1)', () => {
  expect(registryOpenApi(manifest())).toBe(committed);
});

it('has no finding from Redocly’s recommended rules nor Spectral’s spectral:oas', () => {
  const run = spawnSync(process.execPath, [resolve(__dirname, '../bin/openapi-lint.mjs'), REGISTRY_OPENAPI_FILE, '--json'], {
    encoding: 'utf8',
  });
  const found = JSON.parse(run.stdout) as { redocly: unknown[]; spectral: unknown[] };
  expect(found).toEqual({ redocly: [], spectral: [] });
});

it('documents every route of the manifest, each answering to a service token or an API key', () => {
  const doc = JSON.parse(committed) as { paths: Record<string, Record<string, { operationId: string; security: unknown }>> };
  const operations = Object.values(doc.paths).flatMap((ops) => Object.values(ops));
  expect(operations.map((o) => o.operationId).sort()).toEqual(
    manifest()
      .routes.map((r) => r.id)
      .sort(),
  );
  for (const o of operations) expect([o.operationId, o.security]).toEqual([o.operationId, [{ serviceToken: [] }, { apiKey: [] }]]);
});

it('the registry is not on the public edge: no manifest of it composed, no /v1/ route for the gateway to proxy', () => {
  expect(loadManifests(manifestSource).map((m) => m.service)).not.toContain('registry');
  const routes = JSON.parse(readFileSync(ROUTES_FILE, 'utf8')) as { routes: { service: string; path: string }[] };
  expect(routes.routes.filter((r) => r.service === 'registry' || r.path.startsWith('/v1/'))).toEqual([]);
  const openapi = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')) as { paths: Record<string, unknown>; tags: { name: string }[] };
  expect(Object.keys(openapi.paths).filter((p) => p.startsWith('/v1/'))).toEqual([]);
  expect(openapi.tags.map((t) => t.name)).not.toContain('registry');
});
