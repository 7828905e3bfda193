import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runNodeScript } from '@halo/kit/testing';
import { startE2ESystem } from './helpers';

/**
 * The registry in the real system (the launcher, as `npm start`): every service published its own
 * contract at start; a team publishes through the real CLI with an admin API key (scope
 * schema:write, exchanged through auth); a composition error changes nothing; rollback; the
 * registry away → the CLI exits 3. (The gateway serving new compositions is the gateway's test.)
 */
const ROOT = resolve(__dirname, '..');
const dir = mkdtempSync(join(tmpdir(), 'halo-e2e-registry-'));
let sys: Awaited<ReturnType<typeof startE2ESystem>>;
let apiKey: string;

const cli = (...args: string[]) =>
  runNodeScript(resolve(ROOT, 'tools/dist/subgraph.js'), [...args, '--registry', sys.direct('registry')], {
    cwd: ROOT,
    env: { HALO_API_KEY: apiKey },
  });

const json = async (url: string, init: RequestInit = {}) => {
  const res = await fetch(url, init);
  return { status: res.status, body: (await res.json()) as any };
};

beforeAll(async () => {
  sys = await startE2ESystem();
  const post = (path: string, body: object, headers: Record<string, string> = {}) =>
    json(`${sys.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const admin = await post('/auth/login', { email: 'admin@halo.local', password: 'admin-password' });
  const created = await post(
    '/auth/api-keys',
    { name: 'catalog CI', scopes: ['schema:write'] },
    { authorization: `Bearer ${admin.body.token}` },
  );
  expect(created.status).toBe(201);
  apiKey = created.body.data.key;
}, 120_000);

afterAll(async () => {
  await sys?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const catalogSchema = readFileSync(resolve(ROOT, 'services/catalog/schema.graphql'), 'utf8');
const schemaFile = (name: string, sdl: string) => {
  const file = join(dir, name);
  writeFileSync(file, sdl);
  return file;
};

it('the registry holds every service with a contract, at its address in this system', async () => {
  const list = await cli('list', '--json');
  expect(list.code).toBe(0);
  const services = JSON.parse(list.stdout).services as { service: string; url: string }[];
  expect(services.map((s) => s.service)).toEqual(['auth', 'catalog', 'chat', 'content', 'payments']);
  expect(services.find((s) => s.service === 'catalog')!.url).toBe(sys.direct('catalog'));
});

it('an additive change to catalog is accepted and listed', async () => {
  const sku = schemaFile('sku.graphql', catalogSchema.replace(/(type Product @key[^{]*\{)/, '$1\n  sku: String'));
  const res = await cli('publish', '--service', 'catalog', '--schema', sku, '--url', sys.direct('catalog'));
  expect([res.code, res.stderr]).toEqual([0, '']);
  expect(res.stdout).toMatch(/^catalog: published version 2 \(composition \d+\)\n  change: Field 'sku' was added/);
  const versions = await cli('list', '--service', 'catalog');
  expect(versions.stdout.split('\n')[0]).toMatch(/^catalog v2 .* admin:/);
});

it('a composition error is refused and nothing changes', async () => {
  const before = await cli('list', '--json');
  const broken = schemaFile('broken.graphql', `${catalogSchema}\nextend type Query { user(id: ID!): Int }`);
  const res = await cli('publish', '--service', 'catalog', '--schema', broken, '--url', sys.direct('catalog'));
  expect(res.code).toBe(1);
  expect(res.stderr).toMatch(/^catalog: refused \(422\): Check failed\n  composition: /);
  expect((await cli('list', '--json')).stdout).toBe(before.stdout);
});

it('rollback --to 1 republishes version 1', async () => {
  const res = await cli('rollback', '--service', 'catalog', '--to', '1');
  expect([res.code, res.stdout]).toEqual([0, expect.stringMatching(/^catalog: v1 republished as version 3 /)]);
  const versions = JSON.parse((await cli('list', '--service', 'catalog', '--json')).stdout).versions as { version: number; hash: string }[];
  expect(versions[0]!.hash).toBe(versions[2]!.hash);
});

it('the registry stopped: the CLI exits 3 with one line', async () => {
  await sys.stop();
  const res = await cli('check', '--service', 'catalog');
  expect(res.code).toBe(3);
  expect(res.stderr).toMatch(/^registry unreachable at http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED\n$/);
});
