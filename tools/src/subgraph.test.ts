import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { dropSchema, freePort, TEST_DATABASE_URL, testIdentityEnv, throwawaySchema } from '@halo/kit/testing';

/**
 * The real CLI (tools/dist/subgraph.js, built) against a real registry process (its built
 * main.js on a throwaway schema), in development mode as `npm start` runs it: no credentials.
 */
const ROOT = resolve(__dirname, '../..');
const schema = throwawaySchema('cli_registry');
const dir = mkdtempSync(join(tmpdir(), 'halo-subgraph-'));
let registry: ChildProcess;
let base: string;

function run(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [resolve(ROOT, 'tools/dist/subgraph.js'), ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}
const cli = (...args: string[]) => run(...args, '--registry', base);

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  registry = spawn(process.execPath, [resolve(ROOT, 'services/registry/dist/main.js')], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HALO_ENV: 'development',
      LOG_LEVEL: 'warn',
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: String(port),
      GRPC_PORT: '0',
      DATABASE_URL: TEST_DATABASE_URL,
      DB_SCHEMA: schema,
      AUTH_GRPC_ADDR: '127.0.0.1:9',
      ...testIdentityEnv('registry'),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (let i = 0; i < 300; i++) {
    if (
      await fetch(`${base}/readyz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the registry did not become ready');
}, 40_000);

afterAll(async () => {
  if (registry.exitCode === null) {
    registry.kill('SIGTERM');
    await new Promise((r) => registry.once('exit', r));
  }
  await dropSchema(schema);
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
}, 30_000);

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
}, 30_000);

it('publish: a composition error is refused (exit 1, the reason named) and nothing changes', async () => {
  const broken = schemaWith('broken.graphql', `${catalogSchema}\nextend type Query { user(id: ID!): Int }`);
  const res = await cli('publish', '--service', 'catalog', '--schema', broken);
  expect(res.code).toBe(1);
  expect(res.stderr).toMatch(/^catalog: refused \(422\): Check failed\n  composition: .*user/);
  expect((await cli('list', '--service', 'catalog')).stdout.split('\n')[0]).toMatch(/^catalog v2 /);
}, 30_000);

it('rollback: the previous version republished as version 3', async () => {
  const res = await cli('rollback', '--service', 'catalog');
  expect([res.code, res.stdout]).toEqual([0, expect.stringMatching(/^catalog: rolled back as version 3 \(composition 3\)\n/)]);
}, 30_000);

it('routes prints the REST part, which --routes reads back', async () => {
  const routes = await run('routes', '--service', 'catalog');
  expect(routes.code).toBe(0);
  const part = JSON.parse(routes.stdout) as { routes: { service: string }[]; openapi: { tag: { name: string } } };
  expect(part.openapi.tag.name).toBe('catalog');
  expect(part.routes.every((r) => r.service === 'catalog')).toBe(true);
  const same = await cli('publish', '--service', 'catalog', '--routes', schemaWith('routes.json', routes.stdout));
  expect([same.code, same.stdout]).toEqual([0, 'catalog: unchanged (version 3, composition 3)\n']);
}, 30_000);

it('a usage error exits 2 with the usage', async () => {
  for (const args of [
    ['deploy', '--service', 'catalog'],
    ['check'],
    ['check', '--service', 'nope'],
    ['check', '--service', 'catalog', '--bogus'],
    ['check', '--service', 'catalog', '--acknowledge', 'x'],
  ]) {
    const res = await cli(...args);
    expect([args, res.code]).toEqual([args, 2]);
    expect(res.stderr).toMatch(/^subgraph: .+\nUsage: npm run subgraph/);
  }
}, 30_000);

it('registry stopped: exit 3 with one line', async () => {
  registry.kill('SIGTERM');
  await new Promise((r) => registry.once('exit', r));
  const res = await cli('check', '--service', 'catalog');
  expect(res.code).toBe(3);
  expect(res.stderr).toMatch(/^registry unreachable at http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED\n$/);
  expect(res.stdout).toBe('');
}, 30_000);
