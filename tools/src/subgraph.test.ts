import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runNodeScript } from '@halo/kit/testing';
import { removeDevCredentials, writeDevCredentials } from './dev-credentials';
import { startTestRegistry, type TestRegistry } from './test-registry';

/**
 * The real CLI (tools/dist/subgraph.js, built) against a real registry process (its built
 * main.js on a throwaway schema), in development mode as `npm start` runs it: a developer key the
 * registry trusts, left where npm start leaves it for this checkout's CLI.
 */
const ROOT = resolve(__dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'halo-subgraph-'));
let registry: TestRegistry;
let base: string;

const runWith = (env: Record<string, string>, ...args: string[]) =>
  runNodeScript(resolve(ROOT, 'tools/dist/subgraph.js'), args, { cwd: ROOT, env });
const run = (...args: string[]) => runWith({}, ...args);
const cli = (...args: string[]) => run(...args, '--registry', base);

beforeAll(async () => {
  registry = await startTestRegistry('cli_registry');
  base = registry.base;
}, 40_000);

afterAll(async () => {
  await registry?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const catalogSchema = readFileSync(resolve(ROOT, 'services/catalog/schema.graphql'), 'utf8');
const schemaWith = (name: string, sdl: string) => {
  const file = join(dir, name);
  writeFileSync(file, sdl);
  return file;
};
const withSku = () => schemaWith('sku.graphql', catalogSchema.replace(/(type Product @key[^{]*\{)/, '$1\n  sku: String'));

it('check: exit 0 and a human report; --json: the registry’s JSON', async () => {
  const human = await cli('check', '--service', 'catalog', '--schema', withSku());
  expect([human.code, human.stderr]).toEqual([0, '']);
  expect(human.stdout).toBe("catalog: check passed\n  change: Field 'sku' was added to object type 'Product'\n");
  const json = await cli('check', '--service', 'catalog', '--json');
  expect(json.code).toBe(0);
  expect(JSON.parse(json.stdout)).toMatchObject({ ok: true, report: { service: 'catalog', composition: { ok: true }, changes: [] } });
}, 60_000);

it('check options reach the registry: --window, --threshold, --exclude-client (repeatable)', async () => {
  const res = await cli(
    'check',
    '--service',
    'catalog',
    '--json',
    '--window',
    '3',
    '--threshold',
    '2.5',
    '--exclude-client',
    'k6',
    '--exclude-client',
    'internal',
  );
  expect(res.code).toBe(0);
  expect(JSON.parse(res.stdout).report.options).toEqual({ windowDays: 3, thresholdPercent: 2.5, excludeClients: ['k6', 'internal'] });
}, 60_000);

it('publish: an additive change becomes version 2 and is listed', async () => {
  const res = await cli('publish', '--service', 'catalog', '--schema', withSku());
  expect([res.code, res.stdout]).toEqual([0, expect.stringMatching(/^catalog: published version 2 \(composition 2\)\n/)]);
  const list = await cli('list');
  expect(list.stdout).toMatch(/^catalog\s+v2 /m);
  const versions = await cli('list', '--service', 'catalog');
  expect(
    versions.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split('  ')[0]),
  ).toEqual(['catalog v2', 'catalog v1']);
}, 60_000);

it('publish: a composition error is refused (exit 1, the reason named) and nothing changes', async () => {
  const broken = schemaWith('broken.graphql', `${catalogSchema}\nextend type Query { user(id: ID!): Int }`);
  const res = await cli('publish', '--service', 'catalog', '--schema', broken);
  expect(res.code).toBe(1);
  expect(res.stderr).toMatch(/^catalog: refused \(422\): Check failed\n  composition: .*user/);
  expect((await cli('list', '--service', 'catalog')).stdout.split('\n')[0]).toMatch(/^catalog v2 /);
}, 60_000);

it('a routing URL moves only when --url says so, and the check reports it', async () => {
  const kept = await cli('check', '--service', 'catalog', '--schema', withSku(), '--json');
  expect(JSON.parse(kept.stdout).report.changes).toEqual([]);
  const moved = await cli('check', '--service', 'catalog', '--schema', withSku(), '--url', 'http://catalog.elsewhere:8080');
  expect([moved.code, moved.stdout]).toEqual([
    0,
    expect.stringContaining('  change: Routing URL changed from http://127.0.0.1:4003 to http://catalog.elsewhere:8080\n'),
  ]);
}, 60_000);

it("fetch: one version's SDL; diff: the change list, then a text diff", async () => {
  const v2 = await cli('fetch', '--service', 'catalog', '--version', '2');
  expect(v2.code).toBe(0);
  expect(v2.stdout).toContain('sku: String');
  expect((await cli('fetch', '--service', 'catalog', '--version', '1')).stdout).not.toContain('sku: String');
  const missing = await cli('fetch', '--service', 'catalog', '--version', '9');
  expect([missing.code, missing.stderr]).toEqual([1, 'catalog: refused (404): catalog has no version 9\n']);
  const diff = await cli('diff', '--service', 'catalog', '--from', '1', '--to', '2');
  expect(diff.code).toBe(0);
  expect(diff.stdout).toMatch(/^catalog: v1 → v2\n  change: Field 'sku' was added to object type 'Product'\n\n/);
  expect(diff.stdout).toMatch(/^\+\s+sku: String$/m);
}, 60_000);

it("rollback --to 1: version 1 republished as version 3, which log shows with every version's changes", async () => {
  const res = await cli('rollback', '--service', 'catalog', '--to', '1');
  expect([res.code, res.stdout]).toEqual([0, expect.stringMatching(/^catalog: v1 republished as version 3 \(composition 3\)\n/)]);
  const again = await cli('rollback', '--service', 'catalog', '--to', '1');
  expect([again.code, again.stdout]).toEqual([0, 'catalog: unchanged (version 3, composition 3)\n']);
  const log = (await cli('log', '--service', 'catalog')).stdout.split('\n');
  expect(log[0]).toMatch(/^catalog v3 .* \(rollback to v1\)$/);
  expect(log[1]).toMatch(/^ {2}BREAKING: Field 'sku' was removed from object type 'Product'/);
  expect(log).toContain("  change: Field 'sku' was added to object type 'Product'");
  expect(log).toContain('  (changes not recorded: published before the registry kept them)');
}, 60_000);

it('HALO_PORT_OFFSET moves the default registry, as it moves npm start', async () => {
  const res = await runWith({ HALO_PORT_OFFSET: '20000' }, 'list');
  expect([res.code, res.stderr]).toEqual([3, 'registry unreachable at http://127.0.0.1:24006: ECONNREFUSED\n']);
  const bad = await runWith({ HALO_PORT_OFFSET: 'x' }, 'list');
  expect([bad.code, bad.stderr]).toEqual([2, expect.stringMatching(/^subgraph: HALO_PORT_OFFSET must be an integer/)]);
}, 60_000);

it('routes prints the REST part, which --routes reads back', async () => {
  const routes = await run('routes', '--service', 'catalog');
  expect(routes.code).toBe(0);
  const part = JSON.parse(routes.stdout) as { routes: { service: string }[]; openapi: { tag: { name: string } } };
  expect(part.openapi.tag.name).toBe('catalog');
  expect(part.routes.every((r) => r.service === 'catalog')).toBe(true);
  const same = await cli('publish', '--service', 'catalog', '--routes', schemaWith('routes.json', routes.stdout));
  expect([same.code, same.stdout]).toEqual([0, 'catalog: unchanged (version 3, composition 3)\n']);
}, 60_000);

it('a removed REST route: refused until acknowledged, and never called unused (REST calls are not recorded)', async () => {
  const part = JSON.parse((await run('routes', '--service', 'catalog')).stdout) as {
    routes: { method: string; path: string }[];
    openapi: { paths: Record<string, Record<string, unknown>> };
  };
  part.routes = part.routes.filter((r) => !(r.method === 'DELETE' && r.path === '/products/:id'));
  delete part.openapi.paths['/products/{id}']?.delete;
  const res = await cli('check', '--service', 'catalog', '--routes', schemaWith('fewer-routes.json', JSON.stringify(part)));
  expect(res.code).toBe(1);
  expect(res.stderr).toMatch(/BREAKING: 'DELETE \/products\/:id v1' was removed \[REST calls are not recorded: usage unknown\]/);
  expect(res.stderr).not.toContain('[used 0×]');
}, 60_000);

it('a usage error exits 2 with the usage', async () => {
  for (const args of [
    ['deploy', '--service', 'catalog'],
    ['check'],
    ['check', '--service', 'nope'],
    ['check', '--service', 'catalog', '--bogus'],
    ['check', '--service', 'catalog', '--acknowledge', 'x'],
    ['rollback', '--service', 'catalog'],
    ['fetch', '--service', 'catalog'],
    ['fetch', '--service', 'catalog', '--version', '0'],
    ['diff', '--service', 'catalog', '--from', '1'],
    ['list', '--window', '3'],
    ['check', '--service', 'catalog', '--threshold', 'x'],
    ['check', '--service', 'catalog', '--window', '0'],
  ]) {
    const res = await cli(...args);
    expect([args, res.code]).toEqual([args, 2]);
    expect(res.stderr).toMatch(/^subgraph: .+\nUsage: npm run subgraph/);
  }
}, 60_000);

it('a takeover of another service’s field: exit 1, labelled TAKEOVER, with no usage count (usage cannot judge it)', async () => {
  const file = schemaWith(
    'override.graphql',
    `${catalogSchema}\ntype User @key(fields: "id") {\n  id: ID!\n  email: String! @federation__override(from: "content")\n}\n`,
  );
  const res = await cli('check', '--service', 'catalog', '--schema', file);
  expect(res.code).toBe(1);
  expect(res.stdout + res.stderr).toContain('  TAKEOVER: catalog takes over User.email from content (@override)\n');
  expect(res.stdout + res.stderr).not.toMatch(/TAKEOVER: .*\[used/);
});

it("without npm start's developer key or HALO_API_KEY, a publish is refused (401) with what to do; a check still runs", async () => {
  removeDevCredentials(registry.port);
  try {
    const res = await cli('publish', '--service', 'catalog', '--schema', withSku());
    expect(res.code).toBe(1);
    expect(res.stderr.split('\n').slice(0, 2)).toEqual([
      'catalog: refused (401): Token required',
      "  set HALO_API_KEY (an admin API key with scope schema:write), or run this against this checkout's npm start, which hands this CLI its developer key",
    ]);
    expect((await cli('check', '--service', 'catalog', '--schema', withSku())).code).toBe(0);
  } finally {
    writeDevCredentials(registry.port, registry.developer);
  }
});

it('registry stopped: exit 3 with one line', async () => {
  await registry.stop();
  const res = await cli('check', '--service', 'catalog');
  expect(res.code).toBe(3);
  expect(res.stderr).toMatch(/^registry unreachable at http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED\n$/);
  expect(res.stdout).toBe('');
}, 60_000);
