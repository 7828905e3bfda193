import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as sdk from '../src';

/**
 * The published package as a user gets it: `npm pack`'s file list, then the packed tarball
 * unpacked into a throwaway project's node_modules and loaded with `require` (CommonJS) and
 * `import` (ES modules), each through the `exports` map. Its dependencies are linked from this
 * checkout's node_modules instead of installed, so the test needs no registry.
 */
const run = promisify(execFile);
const PACKAGE_DIR = join(__dirname, '..');
const ROOT = join(PACKAGE_DIR, '../..');

interface PackResult {
  filename: string;
  files: { path: string }[];
}

async function npmPack(args: string[]): Promise<PackResult> {
  // The build is up to date (built just before), so pack's own `prepack` build is skipped.
  const { stdout } = await run('npm', ['pack', '--json', '--ignore-scripts', ...args], { cwd: PACKAGE_DIR });
  return (JSON.parse(stdout) as PackResult[])[0]!;
}

/** Runs a one-line program with Node from `cwd` and parses what it prints as JSON. */
async function nodeJson(cwd: string, args: string[]): Promise<unknown> {
  const { stdout } = await run(process.execPath, args, { cwd });
  return JSON.parse(stdout) as unknown;
}

const exportMap = JSON.parse(readFileSync(join(PACKAGE_DIR, 'package.json'), 'utf8')) as {
  exports: Record<string, Record<string, Record<string, string>>>;
  dependencies: Record<string, string>;
};

let files: string[];
let project: string;

beforeAll(async () => {
  await run('npm', ['run', 'build'], { cwd: PACKAGE_DIR }); // tsc -b: does nothing when up to date
  files = (await npmPack(['--dry-run'])).files.map((f) => f.path).sort();

  project = mkdtempSync(join(tmpdir(), 'halo-client-pack-'));
  const { filename } = await npmPack(['--pack-destination', project]);
  const installed = join(project, 'node_modules/@halo/client');
  mkdirSync(installed, { recursive: true });
  await run('tar', ['-xzf', join(project, filename), '-C', installed, '--strip-components=1']);
  for (const dep of Object.keys(exportMap.dependencies)) {
    const source = [join(PACKAGE_DIR, 'node_modules', dep), join(ROOT, 'node_modules', dep)].find((dir) => existsSync(dir));
    if (!source) throw new Error(`${dep} is not installed in this checkout`);
    symlinkSync(source, join(project, 'node_modules', dep), 'dir');
  }
  writeFileSync(join(project, 'package.json'), '{ "private": true }\n');
}, 120_000);

afterAll(() => {
  if (project) rmSync(project, { recursive: true, force: true });
});

describe('npm pack', () => {
  it('ships both builds with their types, and the README', () => {
    expect(files).toEqual(
      expect.arrayContaining([
        'README.md',
        'package.json',
        'dist/cjs/index.js',
        'dist/cjs/index.d.ts',
        'dist/esm/index.js',
        'dist/esm/index.d.ts',
        'dist/esm/package.json',
      ]),
    );
    expect(Object.keys(exportMap.exports)).toEqual(['.', './sse', './package.json']);
    const targets = ['.', './sse'].flatMap((entry) =>
      Object.values(exportMap.exports[entry]!).flatMap((conditions) => Object.values(conditions)),
    );
    expect(targets.map((target) => target.replace(/^\.\//, '')).filter((target) => !files.includes(target))).toEqual([]);
  });

  it('ships no tests, no TypeScript sources and no build bookkeeping', () => {
    const unwanted = files.filter(
      (f) =>
        !/^dist\/(cjs|esm)\/[\w-]+\.(js|js\.map|d\.ts)$/.test(f) &&
        !['LICENSE', 'README.md', 'package.json', 'dist/esm/package.json'].includes(f),
    );
    expect(unwanted).toEqual([]);
    expect(files.filter((f) => /(^|\/)(test|src)\//.test(f) || f.endsWith('.test.js'))).toEqual([]);
  });

  it('ships the Apache-2.0 text its license field names: the LICENSE of the repository', () => {
    expect(files).toContain('LICENSE');
    expect((JSON.parse(readFileSync(join(PACKAGE_DIR, 'package.json'), 'utf8')) as { license: string }).license).toBe('Apache-2.0');
    const shipped = readFileSync(join(project, 'node_modules/@halo/client/LICENSE'), 'utf8');
    expect(shipped).toMatch(/Apache License\s+Version 2\.0, January 2004/);
    expect(shipped).toContain('TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION');
    expect(shipped).toBe(readFileSync(join(ROOT, 'LICENSE'), 'utf8'));
  });

  it('every map a shipped file points at is shipped too', () => {
    const dangling = files
      .filter((f) => /\.(js|d\.ts)$/.test(f))
      .flatMap((f) => {
        const url = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(readFileSync(join(project, 'node_modules/@halo/client', f), 'utf8'))?.[1];
        const target = url ? join(f, '..', url) : undefined;
        return target && !files.includes(target) ? [`${f} -> ${target}`] : [];
      });
    expect(dangling).toEqual([]);
  });

  it('source maps carry their TypeScript, since src/ is not shipped', () => {
    const map = JSON.parse(readFileSync(join(project, 'node_modules/@halo/client/dist/esm/retry.js.map'), 'utf8')) as {
      sourcesContent?: string[];
    };
    expect(map.sourcesContent?.[0]).toContain('export function decideRetry');
  });
});

describe('the packed tarball, installed', () => {
  const names = Object.keys(sdk).sort();

  it('require() loads the CommonJS build with every export', async () => {
    const program =
      "const m = require('@halo/client'); console.log(JSON.stringify([require.resolve('@halo/client'), Object.keys(m).sort()]))";
    const [path, keys] = (await nodeJson(project, ['-e', program])) as [string, string[]];
    expect(path).toMatch(/node_modules\/@halo\/client\/dist\/cjs\/index\.js$/);
    expect(keys).toEqual(names);
  });

  it('import() loads the ES module build with the same exports', async () => {
    const program =
      "const m = await import('@halo/client'); console.log(JSON.stringify([import.meta.resolve('@halo/client'), Object.keys(m).sort()]))";
    const [url, keys] = (await nodeJson(project, ['--input-type=module', '-e', program])) as [string, string[]];
    expect(url).toMatch(/node_modules\/@halo\/client\/dist\/esm\/index\.js$/);
    expect(keys).toEqual(names);
  });

  it('@halo/client/sse loads from both builds, and the main entry never loads graphql-sse', async () => {
    const cjs =
      "const m = require('@halo/client/sse'); console.log(JSON.stringify([require.resolve('@halo/client/sse'), Object.keys(m), m.sseTransport.name]))";
    expect(await nodeJson(project, ['-e', cjs])).toEqual([
      expect.stringMatching(/@halo\/client\/dist\/cjs\/sse\.js$/),
      ['sseTransport'],
      'sse',
    ]);
    const esm =
      "const m = await import('@halo/client/sse'); console.log(JSON.stringify([import.meta.resolve('@halo/client/sse'), Object.keys(m), m.sseTransport.name]))";
    expect(await nodeJson(project, ['--input-type=module', '-e', esm])).toEqual([
      expect.stringMatching(/@halo\/client\/dist\/esm\/sse\.js$/),
      ['sseTransport'],
      'sse',
    ]);
    const main =
      "require('@halo/client'); console.log(JSON.stringify(Object.keys(require.cache).filter((f) => /graphql-sse|sse\\.js$/.test(f))))";
    expect(await nodeJson(project, ['-e', main])).toEqual([]);
  });

  it('is typed for ES module and CommonJS importers (TypeScript, module nodenext)', async () => {
    // Wrong on purpose: were the types unresolved (`any`), the @ts-expect-error would be unused.
    const body = [
      "import { createHaloClient, DEFAULT_RETRY, type HaloClient } from '@halo/client';",
      "import { sseTransport } from '@halo/client/sse';",
      "const halo: HaloClient = createHaloClient({ baseUrl: 'http://127.0.0.1:9', subscriptions: { transport: sseTransport } });",
      '// @ts-expect-error the SSE transport is sseTransport of @halo/client/sse',
      "createHaloClient({ subscriptions: { transport: 'sse' } });",
      'const retries: number = DEFAULT_RETRY.retries;',
      '// @ts-expect-error baseUrl is a string',
      'createHaloClient({ baseUrl: 4000 });',
      'export { halo, retries };',
    ].join('\n');
    writeFileSync(join(project, 'esm.mts'), body);
    writeFileSync(join(project, 'cjs.cts'), body);
    const compilerOptions = { module: 'nodenext', strict: true, noEmit: true, lib: ['es2023', 'dom'], types: [], skipLibCheck: true };
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['esm.mts', 'cjs.cts'] }));
    await expect(run(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', project], { cwd: project })).resolves.toBeDefined();
  });

  it('works from the ES module build: a client is made and the retry policy answers', async () => {
    const program = [
      "import { createHaloClient, decideRetry, HaloApiError } from '@halo/client';",
      "const halo = createHaloClient({ baseUrl: 'http://127.0.0.1:9' });",
      "const outcome = { kind: 'response', status: 503, retryAfter: '2', inProgress: false };",
      'const decision = decideRetry(outcome, { retriesDone: 0, retryable: true, hasIdempotencyKey: false, nowMs: 0 });',
      'console.log(JSON.stringify({ products: typeof halo.products.list, decision, error: HaloApiError.name }));',
    ].join('\n');
    const out = await nodeJson(project, ['--input-type=module', '-e', program]);
    expect(out).toEqual({ products: 'function', decision: { retry: true, waitMs: 2000 }, error: 'HaloApiError' });
  });
});
