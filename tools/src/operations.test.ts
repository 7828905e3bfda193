import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort, runNodeScript } from '@halo/kit/testing';
import { removeDevCredentials, writeDevCredentials } from './dev-credentials';
import { parseOperationsCli, runOperationsCli } from './operations';
import { startTestRegistry, type TestRegistry } from './test-registry';

const ROOT = resolve(__dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'halo-operations-'));
const file = (name: string, json: unknown) => {
  const path = join(dir, name);
  writeFileSync(path, typeof json === 'string' ? json : JSON.stringify(json));
  return path;
};
const manifestFile = file('relay.json', { abc: '{ products { data { id } } }' });

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('parseOperationsCli', () => {
  const parse = (args: string[], env: Record<string, string> = {}) => parseOperationsCli(args, env);

  it('push, list, retire: the options', () => {
    expect(parse(['push', '--client', 'web', '--version', '1.4.0', manifestFile])).toEqual({
      command: 'push',
      client: 'web',
      version: '1.4.0',
      manifest: manifestFile,
      registry: 'http://127.0.0.1:4006',
      json: false,
    });
    expect(parse(['list'])).toEqual({ command: 'list', registry: 'http://127.0.0.1:4006', json: false });
    expect(parse(['list', '--client', 'web', '--version', '1.4.0', '--json'])).toMatchObject({
      client: 'web',
      version: '1.4.0',
      json: true,
    });
    expect(parse(['retire', '--client', 'web', '--version', '1.2.0'])).toMatchObject({
      command: 'retire',
      client: 'web',
      version: '1.2.0',
    });
  });

  it('the registry: --registry, else REGISTRY_URL, else npm start’s moved by HALO_PORT_OFFSET', () => {
    expect(parse(['list', '--registry', 'https://registry.example/'], { REGISTRY_URL: 'http://x:1' }).registry).toBe(
      'https://registry.example',
    );
    expect(parse(['list'], { REGISTRY_URL: 'http://registry.internal:4006/' }).registry).toBe('http://registry.internal:4006');
    expect(parse(['list'], { HALO_PORT_OFFSET: '100' }).registry).toBe('http://127.0.0.1:4106');
  });

  it('usage errors name what is wrong', () => {
    for (const [args, message] of [
      [[], 'a command is required'],
      [['deploy'], 'unknown command: deploy'],
      [['push', '--version', '1.0.0', manifestFile], 'push needs --client NAME --version V'],
      [['push', '--client', 'web', manifestFile], 'push needs --client NAME --version V'],
      [['push', '--client', 'web', '--version', '1.0.0'], 'push needs a manifest file'],
      [['push', '--client', 'web', '--version', '1.0.0', manifestFile, manifestFile], 'push takes one manifest file'],
      [['push', '--client', 'web', '--version', '1.0.0', join(dir, 'missing.json')], `no such file: ${join(dir, 'missing.json')}`],
      [['push', '--client', ' ', '--version', '1.0.0', manifestFile], '--client must not be empty'],
      [['retire', '--client', 'web'], 'retire needs --client NAME --version V'],
      [['list', '--version', '1.0.0'], 'list --version V needs --client NAME'],
      [['list', 'extra'], 'unexpected argument: extra'],
      [['list', '--registry', 'registry:4006'], '--registry must be an http(s) URL'],
      [['list', '--bogus'], "Unknown option '--bogus'"],
    ] as [string[], string][]) {
      expect(() => parse(args)).toThrow(message);
    }
    expect(() => parse(['list'], { HALO_PORT_OFFSET: 'x' })).toThrow(/^HALO_PORT_OFFSET must be an integer/);
  });
});

it('a malformed manifest: exit 2, and no request is made (nothing listens at the registry given)', async () => {
  const nowhere = `http://127.0.0.1:${await freePort()}`;
  const push = (manifest: string) =>
    runOperationsCli(parseOperationsCli(['push', '--client', 'web', '--version', '1.7.0', manifest, '--registry', nowhere], {}));
  const empty = file('empty.json', { format: 'apollo-persisted-query-manifest', version: 1, operations: [] });
  expect(await push(empty)).toEqual({ code: 2, out: [], err: [`operations: ${empty}: the manifest holds no operation`] });
  const noId = file('no-id.json', { format: 'apollo-persisted-query-manifest', version: 1, operations: [{ body: '{ a }' }] });
  expect((await push(noId)).err).toEqual([`operations: ${noId}: operation 1 has no id`]);
  const notString = file('not-string.json', { a1: '{ a }', b2: ['{ b }'] });
  expect((await push(notString)).err).toEqual([`operations: ${notString}: operation b2: its body is not a string`]);
  const other = file('other.json', [1, 2]);
  const res = await push(other);
  expect([res.code, res.err[0]]).toEqual([2, expect.stringContaining("not an operation manifest: expected one of Apollo's")]);
  expect((await push(file('text.graphql', 'query Q { a }'))).err[0]).toMatch(/text\.graphql: not JSON: /);
});

describe('against a real registry', () => {
  const apiKey = process.env.HALO_API_KEY;
  let registry: TestRegistry;
  let base: string;
  const cli = (...args: string[]) => runOperationsCli(parseOperationsCli([...args, '--registry', base], {}));

  beforeAll(async () => {
    delete process.env.HALO_API_KEY;
    registry = await startTestRegistry('cli_operations');
    base = registry.base;
  }, 40_000);

  afterAll(async () => {
    if (apiKey !== undefined) process.env.HALO_API_KEY = apiKey;
    await registry?.stop();
  });

  const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
  const topProducts = 'query TopProducts { products(limit: 3) { data { id name } } }';
  const productNames = 'query ProductNames { products { data { name } } }';
  const anonymous = '{ products(limit: 1) { data { price } } }';
  const apollo = file('apollo.json', {
    format: 'apollo-persisted-query-manifest',
    version: 1,
    operations: [
      { id: sha256(topProducts), name: 'TopProducts', type: 'query', body: topProducts },
      { id: sha256(productNames), name: 'ProductNames', type: 'query', body: productNames },
    ],
  });

  it('push an Apollo manifest: registered, then unchanged; --json prints the registry’s answer', async () => {
    expect(await cli('push', '--client', 'web', '--version', '1.4.0', apollo)).toEqual({
      code: 0,
      out: ['web 1.4.0: 2 operations registered (2 added, 0 removed)'],
      err: [],
    });
    expect(await cli('push', '--client', 'web', '--version', '1.4.0', apollo)).toEqual({
      code: 0,
      out: ['web 1.4.0: unchanged (2 operations)'],
      err: [],
    });
    const json = await cli('push', '--client', 'web', '--version', '1.4.0', apollo, '--json');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.out[0]!)).toMatchObject({ client: 'web', version: '1.4.0', unchanged: true });
  });

  it("push Relay's map and GraphQL Code Generator's map; a new version's added and removed", async () => {
    const relay = file('persisted_queries.json', { r1: topProducts, r2: anonymous });
    expect(await cli('push', '--client', 'ios', '--version', '2.0.0', relay)).toMatchObject({
      code: 0,
      out: ['ios 2.0.0: 2 operations registered (2 added, 0 removed)'],
    });
    const codegen = file('persisted-documents.json', {
      [sha256(topProducts)]: topProducts,
      [sha256(productNames)]: productNames,
      [sha256(anonymous)]: anonymous,
    });
    expect(await cli('push', '--client', 'web', '--version', '1.5.0', codegen)).toMatchObject({ code: 0 });
    const again = file('persisted-documents-2.json', { [sha256(topProducts)]: topProducts });
    expect(await cli('push', '--client', 'web', '--version', '1.5.0', again)).toEqual({
      code: 0,
      out: ['web 1.5.0: 1 operation registered (0 added, 2 removed)'],
      err: [],
    });
  });

  it('list: every client version as a table; --client narrows it; --version: its operations', async () => {
    const all = await cli('list');
    expect(all.code).toBe(0);
    expect(all.out[0]).toMatch(/^client\s+version\s+operations\s+pushed\s+by\s+retired$/);
    expect(all.out.slice(1).map((l) => l.split(/\s+/).slice(0, 3))).toEqual(
      expect.arrayContaining([
        ['web', '1.4.0', '2'],
        ['web', '1.5.0', '1'],
        ['ios', '2.0.0', '2'],
      ]),
    );
    const web = await cli('list', '--client', 'web');
    expect(web.out.slice(1).every((l) => l.startsWith('web '))).toBe(true);
    expect(web.out).toHaveLength(3);
    const one = await cli('list', '--client', 'web', '--version', '1.4.0');
    expect(one.code).toBe(0);
    expect(one.out[0]).toMatch(/^web 1\.4\.0: 2 operations, pushed at \S+ by \S+/);
    expect(one.out.slice(1).sort()).toEqual([`  ${sha256(productNames)}  ProductNames`, `  ${sha256(topProducts)}  TopProducts`].sort());
    const json = await cli('list', '--client', 'ios', '--version', '2.0.0', '--json');
    expect(JSON.parse(json.out[0]!).operations).toEqual(
      expect.arrayContaining([
        { id: 'r1', name: 'TopProducts', body: topProducts },
        { id: 'r2', name: '', body: anonymous },
      ]),
    );
    const missing = await cli('list', '--client', 'web', '--version', '9.9.9');
    expect([missing.code, missing.err[0]]).toEqual([1, expect.stringMatching(/^web 9\.9\.9: refused \(404\): /)]);
  });

  it('an operation the schema cannot run is refused, each on its own line, and nothing is registered', async () => {
    const bad = file('bad.json', { ok1: topProducts, bad1: 'query Broken { products { data { nope } } }' });
    const res = await cli('push', '--client', 'web', '--version', '1.6.0', bad);
    expect(res.code).toBe(1);
    expect(res.err[0]).toBe('web 1.6.0: refused (400): 1 of 2 operations refused');
    expect(res.err.slice(1)).toEqual([expect.stringMatching(/^refused {2}Broken: .*nope/)]);
    expect((await cli('list', '--client', 'web', '--version', '1.6.0')).code).toBe(1);
  });

  it('retire: retired at a time; a push to it is refused (409)', async () => {
    await cli('push', '--client', 'web', '--version', '1.2.0', apollo);
    const res = await cli('retire', '--client', 'web', '--version', '1.2.0');
    expect([res.code, res.out]).toEqual([0, [expect.stringMatching(/^web 1\.2\.0: retired at \d{4}-\d\d-\d\dT\S+$/)]]);
    const push = await cli('push', '--client', 'web', '--version', '1.2.0', apollo);
    expect(push).toEqual({ code: 1, out: [], err: ['web 1.2.0: refused (409): web 1.2.0 is retired'] });
    const row = (await cli('list', '--client', 'web')).out.find((l) => l.startsWith('web ') && l.includes(' 1.2.0 '));
    expect(row).toMatch(/\d{4}-\d\d-\d\dT\S+$/);
  });

  it("without npm start's developer key or HALO_API_KEY, a push is refused (401) with what to do", async () => {
    removeDevCredentials(registry.port);
    try {
      const res = await cli('push', '--client', 'web', '--version', '1.8.0', apollo);
      expect(res.code).toBe(1);
      expect(res.err[0]).toMatch(/^web 1\.8\.0: refused \(401\): /);
      expect(res.err[1]).toBe(
        "  set HALO_API_KEY (an admin API key with scope operations:write), or run this against this checkout's npm start, which hands this CLI its developer key",
      );
    } finally {
      writeDevCredentials(registry.port, registry.developer);
    }
  });

  it('npm run operations: the built script, its exit codes and the usage', async () => {
    const script = resolve(ROOT, 'tools/dist/operations.js');
    const ok = await runNodeScript(script, ['list', '--client', 'ios', '--registry', base], { cwd: ROOT });
    expect([ok.code, ok.stderr]).toEqual([0, '']);
    expect(ok.stdout).toMatch(/^ios\s+2\.0\.0\s+2\s/m);
    const usage = await runNodeScript(script, ['push', '--client', 'web'], { cwd: ROOT });
    expect([usage.code, usage.stdout]).toEqual([2, '']);
    expect(usage.stderr).toMatch(/^operations: push needs --client NAME --version V\nUsage: npm run operations/);
  }, 60_000);

  it('registry unreachable: exit 3 with one line', async () => {
    const closed = await freePort();
    const res = await runOperationsCli(parseOperationsCli(['list', '--registry', `http://127.0.0.1:${closed}`], {}));
    expect(res).toEqual({ code: 3, out: [], err: [`registry unreachable at http://127.0.0.1:${closed}: ECONNREFUSED`] });
    const offset = await runNodeScript(resolve(ROOT, 'tools/dist/operations.js'), ['list'], {
      cwd: ROOT,
      env: { HALO_PORT_OFFSET: '20000' },
    });
    expect([offset.code, offset.stderr]).toEqual([3, 'registry unreachable at http://127.0.0.1:24006: ECONNREFUSED\n']);
  });
});
