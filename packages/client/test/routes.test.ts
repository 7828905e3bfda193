import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { REST_ROUTES } from '../src';

/**
 * The SDK covers the public REST contract: every route of the gateway's composed route table
 * (gateway/routes.json, built from the services' manifests by `npm run compose`) has a helper,
 * and the SDK names no route the gateway does not serve.
 */
interface RouteTable {
  routes: { method: string; path: string }[];
}

it('has a helper for every route the gateway serves, and no other', () => {
  const table = JSON.parse(readFileSync(resolve(__dirname, '../../../gateway/routes.json'), 'utf8')) as RouteTable;
  const served = table.routes.map((r) => `${r.method} ${r.path}`).sort();
  const covered = REST_ROUTES.map(([method, path]) => `${method} ${path}`).sort();
  expect(covered).toEqual(served);
});
