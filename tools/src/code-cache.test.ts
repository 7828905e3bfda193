import { fork } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { cachedDataVersionTag } from 'node:v8';
import { CODE_CACHE_REQUEST, codeCachePath, isCodeCacheReport, type CodeCacheReport } from './code-cache';
import { CODE_CACHE_RUNNER, entryArgs } from './launcher';

/**
 * The runner the launcher starts each bundle with (ADR 0012), as a real child process over IPC:
 * the bundle runs as a main script would, the cache written once asked is used by the next start,
 * and a cache that is damaged or belongs to another bundle only means compiling again.
 */
let dir: string;
let bundle: string;
const source = (word: string) =>
  [
    `const sibling = require('./sibling.js');`,
    `console.log(JSON.stringify({ word: '${word}', sibling, main: require.main === module, filename: __filename, dirname: __dirname, argv1: process.argv[1], stack: new Error('x').stack.split('\\n')[1] }));`,
    // Keeps the process alive until the test disconnects, as a server would.
    `process.on('message', () => undefined);`,
  ].join('\n');

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'halo-code-cache-'));
  bundle = join(dir, 'main.bundle.js');
  writeFileSync(join(dir, 'sibling.js'), 'module.exports = 42;');
  writeFileSync(bundle, source('alpha'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function start(): Promise<{ printed: Record<string, unknown>; report: CodeCacheReport }> {
  const child = fork(CODE_CACHE_RUNNER, [bundle], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  const report = new Promise<CodeCacheReport>((ok) => child.on('message', (m) => isCodeCacheReport(m) && ok(m)));
  await new Promise((r) => child.stdout!.once('data', r));
  child.send(CODE_CACHE_REQUEST);
  const answer = await report;
  child.disconnect();
  await new Promise((r) => child.once('exit', r));
  return { printed: JSON.parse(out) as Record<string, unknown>, report: answer };
}

const cacheFile = () =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.v8cache'))
    .map((f) => join(dir, f));

it('runs the bundle as the main script, and the next start uses the cache written once asked', async () => {
  const first = await start();
  expect(first.printed).toEqual({
    word: 'alpha',
    sibling: 42,
    main: true,
    filename: bundle,
    dirname: dir,
    argv1: bundle,
    stack: expect.stringContaining(`${bundle}:2:`),
  });
  expect(first.report).toEqual({ halo: 'code-cache-report', outcome: 'absent', written: expect.any(Number) });
  expect(first.report.written).toBeGreaterThan(0);
  expect(cacheFile()).toHaveLength(1);
  expect((await start()).report).toEqual({ halo: 'code-cache-report', outcome: 'used', written: 0 });
}, 30_000);

it('compiles again, and rewrites the cache, when it is damaged or belongs to another bundle of the same length', async () => {
  await start();
  const [file] = cacheFile();
  const bytes = readFileSync(file!);
  for (let i = bytes.length - 100; i < bytes.length; i++) bytes[i] = bytes[i]! ^ 0x5a;
  writeFileSync(file!, bytes);
  expect((await start()).report.outcome).toBe('stale');
  expect((await start()).report.outcome).toBe('used');
  // V8 checks only a source's length: the same length with other code must not get the old code.
  writeFileSync(bundle, source('omega'));
  const changed = await start();
  expect(changed.printed.word).toBe('omega');
  expect(changed.report.outcome).toBe('stale');
  writeFileSync(file!, 'not a cache');
  expect((await start()).report.outcome).toBe('stale');
}, 30_000);

it('the launcher runs a bundle through the runner unless HALO_CODE_CACHE=0, HALO_SOURCE_MAPS=1 or HALO_BUNDLES=0', () => {
  const content = resolve(__dirname, '../../services/content/dist');
  expect(entryArgs('content', {})).toEqual([CODE_CACHE_RUNNER, join(content, 'main.bundle.js')]);
  expect(entryArgs('content', { HALO_CODE_CACHE: '0' })).toEqual([join(content, 'main.bundle.js')]);
  expect(entryArgs('content', { HALO_SOURCE_MAPS: '1' })).toEqual(['--enable-source-maps', join(content, 'main.bundle.js')]);
  expect(entryArgs('content', { HALO_BUNDLES: '0' })).toEqual([join(content, 'main.js')]);
});

it('keeps the cache beside the bundle, or in HALO_CODE_CACHE_DIR named after the bundle path', () => {
  const tag = cachedDataVersionTag().toString(16);
  expect(codeCachePath('/srv/halo/gateway/dist/main.bundle.js', '')).toBe(`/srv/halo/gateway/dist/main.bundle.js.${tag}.v8cache`);
  expect(codeCachePath('/srv/halo/gateway/dist/main.bundle.js', '/tmp/caches')).toBe(
    `/tmp/caches/srv__halo__gateway__dist__main.bundle.js.${tag}.v8cache`,
  );
});
