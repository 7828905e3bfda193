import { readFileSync } from 'node:fs';
import { composedRouteTableSchema } from '@halo/kit/rest';
import { composeRest, loadManifests, manifestSource, OPENAPI_FILE, ROUTES_FILE } from './compose-rest';
import { validateOpenApi } from './openapi-validate';

/**
 * The composed REST artifacts: what is committed is what the services' manifests compose to
 * (CI runs `npm run compose:check` on the build; this does it on the sources), and the OpenAPI
 * document is valid OpenAPI 3.1 by the specification's own schema.
 */

const committed = {
  routes: readFileSync(ROUTES_FILE, 'utf8'),
  openapi: readFileSync(OPENAPI_FILE, 'utf8'),
};
type Doc = { openapi: string; paths: Record<string, Record<string, { operationId: string; deprecated?: boolean }>> } & Record<
  string,
  unknown
>;
const doc = JSON.parse(committed.openapi) as Doc;

it('gateway/routes.json and gateway/openapi.json are what the manifests compose to', () => {
  const fresh = composeRest(() => loadManifests(manifestSource));
  if ('errors' in fresh) throw new Error(fresh.errors.join('\n'));
  expect(fresh.routes).toBe(committed.routes);
  expect(fresh.openapi).toBe(committed.openapi);
});

it('the OpenAPI document validates against the OpenAPI 3.1 schema', () => {
  const result = validateOpenApi(doc);
  expect(result.errors).toBeUndefined();
  expect(result).toMatchObject({ valid: true, version: '3.1' });
});

it('the validator is not a rubber stamp: a broken document fails', () => {
  const { info: _info, ...withoutInfo } = doc;
  expect(validateOpenApi(withoutInfo).valid).toBe(false);
  const badParam = structuredClone(doc);
  (badParam.paths['/products/{id}']!.get as unknown as { parameters: unknown[] }).parameters = [{ name: 'id', in: 'body' }];
  expect(validateOpenApi(badParam).valid).toBe(false);
});

it('every route of the table has its operations in the document, and nothing else is there', () => {
  const table = composedRouteTableSchema.parse(JSON.parse(committed.routes));
  // Version 1 at the unversioned path, and at /api/v1 too when the route has several versions.
  const fromTable = table.routes.flatMap((r) =>
    (r.versions ?? [1]).flatMap((v) => {
      const paths = v !== 1 ? [`/api/v${v}${r.path}`] : (r.versions ?? [1]).length > 1 ? [r.path, `/api/v1${r.path}`] : [r.path];
      return paths.map((p) => `${r.method.toLowerCase()} ${p.replace(/:(\w+)/g, '{$1}')}${r.deprecated?.[v] ? ' (deprecated)' : ''}`);
    }),
  );
  const fromDoc = Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => `${method} ${path}${op.deprecated ? ' (deprecated)' : ''}`),
  );
  expect(fromDoc.sort()).toEqual(fromTable.sort());
  expect(fromTable).toContain('get /products (deprecated)');
  expect(fromTable).toContain('get /api/v2/products');
  expect(fromTable).toContain('get /api/v1/products (deprecated)');
});
