import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { SERVICE_NAMES } from '@halo/kit/config';

/**
 * The service template's rules, checked on every `npm test` (docs/adding-a-service.md, step 2):
 * - `src/domain/` imports only the kit's I/O-free entries, its own folder and pure Node built-ins;
 * - a service's `src/` imports no other service, no gateway and no `tools/`;
 * - a service's `src/` holds only the template's top-level entries, read from the doc's list.
 * Imports are read with the TypeScript parser (static, type-only, re-exports, `import()`, `require`).
 */

const ROOT = resolve(__dirname, '../..');
const DOC = 'docs/adding-a-service.md';

/** Node built-ins with no I/O: what a domain rule may use (hashes, random ids, text encodings). */
const PURE_BUILTINS = new Set(['crypto', 'util', 'buffer', 'url', 'assert', 'string_decoder']);

/**
 * Packages a domain may import: the kit's entries that open nothing — errors, the domain values,
 * callers and scopes, the `Logger` it is handed, the registry's contract types — and
 * `@halo/contracts`: the registry's domain is composition and compatibility rules over contracts,
 * pure functions of their input.
 */
const DOMAIN_PACKAGES = new Set([
  ...['errors', 'domain', 'auth', 'logging', 'contract'].map((entry) => `@halo/kit/${entry}`),
  '@halo/contracts',
]);

const rel = (file: string) => relative(ROOT, file).split(sep).join('/');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return /\.(c|m)?tsx?$/.test(e.name) && !e.name.endsWith('.d.ts') ? [path] : [];
  });
}

interface Import {
  specifier: string;
  line: number;
}

/** Every module a file names: import/export declarations, `import x = require()`, `import()`, `require()`, `import('x').T`. */
export function importsOf(file: string, text = readFileSync(file, 'utf8')): Import[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: Import[] = [];
  const add = (node: ts.Node | undefined) => {
    if (node && ts.isStringLiteralLike(node)) {
      found.push({ specifier: node.text, line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1 });
    }
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) add(node.moduleSpecifier);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) add(node.moduleReference.expression);
    else if (ts.isCallExpression(node)) {
      const callee = node.expression;
      if (callee.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(callee) && callee.text === 'require')) add(node.arguments[0]);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node.argument.literal);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const isBuiltin = (s: string) => s.startsWith('node:') || builtinModules.includes(s.split('/')[0]!);
const builtinName = (s: string) => s.replace(/^node:/, '');

/** Why a domain file may not import `specifier`, or null when it may. */
export function domainViolation(file: string, domainDir: string, specifier: string): string | null {
  if (specifier.startsWith('.')) {
    const target = resolve(dirname(file), specifier);
    return target === domainDir || target.startsWith(domainDir + sep) ? null : 'leaves domain/';
  }
  if (isBuiltin(specifier)) return PURE_BUILTINS.has(builtinName(specifier)) ? null : 'a Node built-in that does I/O';
  return DOMAIN_PACKAGES.has(specifier) ? null : 'a package other than the I/O-free kit entries';
}

/** Why a service's `src/` file may not import `specifier`, or null when it may. */
export function boundaryViolation(file: string, serviceDir: string, service: string, specifier: string): string | null {
  if (specifier.startsWith('.')) {
    const target = resolve(dirname(file), specifier);
    return target.startsWith(serviceDir + sep) ? null : 'leaves the service folder';
  }
  const m = /^@halo\/([^/]+)/.exec(specifier);
  if (!m || m[1] === service) return null;
  if ((SERVICE_NAMES as readonly string[]).includes(m[1]!)) return 'another service (ask it over gRPC, or let federation join)';
  if (m[1] === 'gateway' || m[1] === 'tools') return `@halo/${m[1]} is no library of services`;
  return null;
}

/** The template's top-level entries of `src/`, from the one list in the doc (its step-2 block). */
export function templateEntries(doc: string): Set<string> {
  const section = doc.split(/^## /m).find((s) => s.startsWith('2. Lay out the folder'));
  const block = section?.split('```')[1];
  if (!block) throw new Error(`${DOC}: no folder layout block under "## 2. Lay out the folder"`);
  const entries = new Set<string>();
  for (const line of block.split('\n')) {
    const m = /^\s*src\/([^\s/]+\/?)/.exec(line);
    if (m) entries.add(m[1]!);
  }
  if (entries.size === 0) throw new Error(`${DOC}: the layout block lists no src/ entry`);
  return entries;
}

const services = SERVICE_NAMES.map((name) => ({ name, dir: join(ROOT, 'services', name) }));

describe('the service template (docs/adding-a-service.md)', () => {
  it('has a src/ for every service of the topology', () => {
    for (const s of services) expect(statSync(join(s.dir, 'src')).isDirectory()).toBe(true);
  });

  it('domain/ imports only the I/O-free kit entries, its own folder and pure Node built-ins', () => {
    const violations: string[] = [];
    for (const s of services) {
      const domainDir = join(s.dir, 'src', 'domain');
      for (const file of sourceFiles(domainDir)) {
        for (const { specifier, line } of importsOf(file)) {
          const why = domainViolation(file, domainDir, specifier);
          if (why) violations.push(`${rel(file)}:${line} imports '${specifier}' (${why})`);
        }
      }
    }
    expect(violations).toEqual([]);
  });

  it('no service imports another service, the gateway or tools/', () => {
    const violations: string[] = [];
    for (const s of services) {
      for (const file of sourceFiles(join(s.dir, 'src'))) {
        for (const { specifier, line } of importsOf(file)) {
          const why = boundaryViolation(file, s.dir, s.name, specifier);
          if (why) violations.push(`${rel(file)}:${line} imports '${specifier}' (${why})`);
        }
      }
    }
    expect(violations).toEqual([]);
  });

  it('each service and the gateway declare the Halo packages they import (its image builds it alone)', () => {
    // deploy/Dockerfile compiles one workspace with `tsc -b <APP>`: a package reached only through
    // the monorepo's hoisting or the root build is missing there.
    const missing: string[] = [];
    for (const dir of [...services.map((s) => s.dir), join(ROOT, 'gateway')]) {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
      const tsconfig = ts.readConfigFile(join(dir, 'tsconfig.json'), ts.sys.readFile).config as { references?: { path: string }[] };
      const references = new Set((tsconfig.references ?? []).map((r) => resolve(dir, r.path)));
      const used = new Set<string>();
      for (const file of sourceFiles(join(dir, 'src'))) {
        for (const { specifier } of importsOf(file)) {
          const m = /^@halo\/([^/]+)/.exec(specifier);
          if (m) used.add(m[1]!);
        }
      }
      for (const pkg of used) {
        if (!manifest.dependencies?.[`@halo/${pkg}`]) missing.push(`${rel(dir)}/package.json lacks the dependency @halo/${pkg}`);
        if (!references.has(join(ROOT, 'packages', pkg))) missing.push(`${rel(dir)}/tsconfig.json lacks a reference to packages/${pkg}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('src/ holds only the template’s top-level entries', () => {
    const allowed = templateEntries(readFileSync(join(ROOT, DOC), 'utf8'));
    const strays: string[] = [];
    for (const s of services) {
      for (const e of readdirSync(join(s.dir, 'src'), { withFileTypes: true })) {
        const entry = e.isDirectory() ? `${e.name}/` : e.name;
        if (!allowed.has(entry)) strays.push(`services/${s.name}/src/${entry} is not in ${DOC}'s layout (${[...allowed].join(' ')})`);
      }
    }
    expect(strays).toEqual([]);
  });
});

/**
 * The gateway's stages (gateway/README.md): each folder of gateway/src (and each top-level file)
 * is one stage. A stage reaches another only through that stage's `index.ts`, and the stages
 * import each other without a loop, so each can be read (and tested) from its entry down.
 */
const GATEWAY_SRC = join(ROOT, 'gateway/src');

/** The stage a gateway file or import target belongs to: its first path segment under src/. */
export function gatewayStage(file: string): string {
  return relative(GATEWAY_SRC, file).split(sep)[0]!.replace(/\.ts$/, '');
}

/** Every import from one gateway stage into another: [from stage, to stage, the target within it]. */
function gatewayStageImports(): { from: string; to: string; target: string; where: string }[] {
  const found: { from: string; to: string; target: string; where: string }[] = [];
  for (const file of sourceFiles(GATEWAY_SRC)) {
    if (file.endsWith('.test.ts')) continue;
    for (const { specifier, line } of importsOf(file)) {
      if (!specifier.startsWith('.')) continue;
      const target = resolve(dirname(file), specifier);
      const [from, to] = [gatewayStage(file), gatewayStage(target)];
      if (from !== to) found.push({ from, to, target: relative(join(GATEWAY_SRC, to), target), where: `${rel(file)}:${line}` });
    }
  }
  return found;
}

/** The first loop in a graph of stages, as a path (`a → b → a`), or null. */
export function firstLoop(edges: ReadonlyMap<string, ReadonlySet<string>>): string | null {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string): string | null => {
    if (state.get(node) === 'done') return null;
    if (state.get(node) === 'open') return [...path.slice(path.indexOf(node)), node].join(' → ');
    state.set(node, 'open');
    path.push(node);
    for (const next of edges.get(node) ?? []) {
      const loop = visit(next);
      if (loop) return loop;
    }
    path.pop();
    state.set(node, 'done');
    return null;
  };
  for (const node of edges.keys()) {
    const loop = visit(node);
    if (loop) return loop;
  }
  return null;
}

describe("the gateway's stages (gateway/README.md)", () => {
  const imports = gatewayStageImports();

  it("reach each other only through a stage's index.ts", () => {
    const bypassing = imports.filter((i) => existsSync(join(GATEWAY_SRC, i.to)) && i.target !== '' && i.target !== 'index');
    expect(bypassing.map((i) => `${i.where} imports ${i.to}/${i.target}, not ${i.to}'s index`)).toEqual([]);
  });

  it('import each other without a loop', () => {
    const edges = new Map<string, Set<string>>();
    for (const { from, to } of imports) (edges.get(from) ?? edges.set(from, new Set()).get(from)!).add(to);
    expect(firstLoop(edges)).toBeNull();
  });
});

/**
 * The kit's entry points (packages/kit/README.md): one folder of packages/kit/src per concern, its
 * index.ts exported by package.json as `@halo/kit/<folder>`. Code outside the kit imports only those
 * entries; production code never imports `testing`; and the folders import each other without a
 * loop, so the kit reads from its low-level folders (config, errors, logging) up to `service`.
 */
const KIT_DIR = join(ROOT, 'packages/kit');
const KIT_SRC = join(KIT_DIR, 'src');
const KIT_EXPORTS = (JSON.parse(readFileSync(join(KIT_DIR, 'package.json'), 'utf8')) as { exports: Record<string, unknown> }).exports;
/** The entries package.json declares: `./config` → `config`. */
const KIT_ENTRIES: ReadonlySet<string> = new Set(Object.keys(KIT_EXPORTS).map((key) => key.replace(/^\.\//, '')));

/** The one file outside the kit that reaches into it by path, and the module it may load. */
const KIT_BY_PATH: Readonly<Record<string, string>> = {
  // Jest's global setup starts Redis before any test, with Node's own resolution: it loads this
  // module alone, from source, not the whole testing entry from a build that may not exist yet.
  'tools/jest/test-servers.ts': 'packages/kit/src/testing/test-redis',
};

/** Why a file outside the kit may not import `specifier`, or null when it may. */
export function kitImportViolation(file: string, specifier: string, entries: ReadonlySet<string> = KIT_ENTRIES): string | null {
  if (specifier.startsWith('.')) {
    const target = resolve(dirname(file), specifier);
    if (target !== KIT_DIR && !target.startsWith(KIT_DIR + sep)) return null;
    return KIT_BY_PATH[rel(file)] === rel(target) ? null : 'reaches into packages/kit by path (import @halo/kit/<entry>)';
  }
  const m = /^@halo\/kit(?:\/(.*))?$/.exec(specifier);
  if (!m) return null;
  if (m[1] === undefined) return 'the kit has no root entry (import @halo/kit/<entry>)';
  return entries.has(m[1]) ? null : `no entry ./${m[1]} in packages/kit/package.json`;
}

/**
 * Test code: tests and what only they run — `*.test.ts`, anything under a `test/`, `e2e/` or
 * `jest/` folder, tools' test helpers (`tools/src/test-*.ts`), the kit's `testing/` folder and the
 * benchmarks (`loadtest/`, run against the test database). The rest runs in a process Halo deploys
 * or launches.
 */
export function isTestCode(path: string): boolean {
  return (
    /\.test\.[cm]?[jt]sx?$/.test(path) ||
    /(^|\/)(test|e2e|jest)\//.test(path) ||
    /^tools\/src\/test-[^/]+$/.test(path) ||
    path.startsWith('packages/kit/src/testing/') ||
    path.startsWith('loadtest/')
  );
}

/** Why production code may not import `specifier` (the kit's test helpers), or null. */
export function testingViolation(file: string, specifier: string): string | null {
  if (isTestCode(rel(file))) return null;
  const target = specifier.startsWith('.') ? rel(resolve(dirname(file), specifier)) : specifier;
  const testing = ['@halo/kit/testing', 'packages/kit/src/testing'].some((t) => target === t || target.startsWith(`${t}/`));
  return testing ? "production code imports the kit's test helpers" : null;
}

/** The kit folder a kit file or import target belongs to. */
export const kitFolder = (file: string): string => relative(KIT_SRC, file).split(sep)[0]!;

const SKIPPED_DIRS = new Set(['node_modules', 'dist', 'coverage', 'charts', 'gen']);

/** Every code file of a folder, JavaScript included, without dependencies, builds, generated code or dot folders. */
function codeFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return SKIPPED_DIRS.has(e.name) || e.name.startsWith('.') ? [] : codeFiles(path);
    return /\.(c|m)?[jt]sx?$/.test(e.name) && !e.name.endsWith('.d.ts') ? [path] : [];
  });
}

describe("the kit's entry points (packages/kit/README.md)", () => {
  const kitFiles = codeFiles(KIT_SRC);
  const outside = ['packages', 'services', 'gateway', 'tools', 'loadtest', 'e2e', 'deploy', 'helm']
    .flatMap((dir) => codeFiles(join(ROOT, dir)))
    .filter((file) => !file.startsWith(KIT_DIR + sep));
  const imports = new Map([...kitFiles, ...outside].map((file) => [file, importsOf(file)]));

  it("are its folders: package.json exports each folder's index.ts, which names what it exports", () => {
    const folders = readdirSync(KIT_SRC, { withFileTypes: true });
    expect(folders.filter((e) => !e.isDirectory()).map((e) => e.name)).toEqual([]);
    expect([...KIT_ENTRIES].sort()).toEqual(folders.map((e) => e.name).sort());
    for (const entry of KIT_ENTRIES) {
      expect(KIT_EXPORTS[`./${entry}`]).toEqual({ types: `./dist/${entry}/index.d.ts`, default: `./dist/${entry}/index.js` });
      const index = ts.createSourceFile('index.ts', readFileSync(join(KIT_SRC, entry, 'index.ts'), 'utf8'), ts.ScriptTarget.Latest);
      const star = index.statements.filter((st) => ts.isExportDeclaration(st) && !st.exportClause);
      expect(star.map((st) => `${entry}/index.ts: ${st.getText(index)}`)).toEqual([]);
    }
  });

  it('are the only way into the kit from outside it', () => {
    const violations = outside.flatMap((file) =>
      imports.get(file)!.flatMap(({ specifier, line }) => {
        const why = kitImportViolation(file, specifier);
        return why ? [`${rel(file)}:${line} imports '${specifier}' (${why})`] : [];
      }),
    );
    expect(violations).toEqual([]);
  });

  it('keep testing out of production code, inside the kit and out', () => {
    const violations = [...imports].flatMap(([file, found]) =>
      found.flatMap(({ specifier, line }) => {
        const why = testingViolation(file, specifier);
        return why ? [`${rel(file)}:${line} imports '${specifier}' (${why})`] : [];
      }),
    );
    expect(violations).toEqual([]);
  });

  it('sit on folders that import each other without a loop', () => {
    const edges = new Map<string, Set<string>>();
    // Tests are left out: a folder's tests may use `testing`, which sits above every other folder.
    for (const file of kitFiles.filter((f) => !f.endsWith('.test.ts'))) {
      for (const { specifier } of imports.get(file)!) {
        if (!specifier.startsWith('.')) continue;
        const [from, to] = [kitFolder(file), kitFolder(resolve(dirname(file), specifier))];
        if (from !== to) (edges.get(from) ?? edges.set(from, new Set()).get(from)!).add(to);
      }
    }
    expect(firstLoop(edges)).toBeNull();
  });
});

describe('the checks themselves', () => {
  it('finds a loop of stages, and none where there is none', () => {
    const graph = (pairs: [string, string][]) => {
      const edges = new Map<string, Set<string>>();
      for (const [a, b] of pairs) (edges.get(a) ?? edges.set(a, new Set()).get(a)!).add(b);
      return edges;
    };
    expect(
      firstLoop(
        graph([
          ['graphql', 'http'],
          ['http', 'observability'],
          ['observability', 'graphql'],
        ]),
      ),
    ).toBe('graphql → http → observability → graphql');
    expect(
      firstLoop(
        graph([
          ['app', 'graphql'],
          ['graphql', 'http'],
          ['app', 'http'],
        ]),
      ),
    ).toBeNull();
  });

  const domainDir = join(ROOT, 'services/x/src/domain');
  const file = join(domainDir, 'rules.ts');

  it('finds every kind of import', () => {
    const text = [
      "import a from 'a';",
      "import type { B } from 'b';",
      "export * from 'c';",
      "import d = require('d');",
      "const e = require('e');",
      "void import('f');",
      "type G = import('g').G;",
    ].join('\n');
    expect(importsOf('x.ts', text).map((i) => i.specifier)).toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'g']);
  });

  it('tells a domain import from an adapter import', () => {
    expect(domainViolation(file, domainDir, './model')).toBeNull();
    expect(domainViolation(file, domainDir, 'node:crypto')).toBeNull();
    expect(domainViolation(file, domainDir, '@halo/kit/errors')).toBeNull();
    expect(domainViolation(file, domainDir, '@halo/kit/domain')).toBeNull();
    expect(domainViolation(file, domainDir, '../db/store')).toBe('leaves domain/');
    expect(domainViolation(file, domainDir, 'node:fs')).toBe('a Node built-in that does I/O');
    expect(domainViolation(file, domainDir, 'net')).toBe('a Node built-in that does I/O');
    expect(domainViolation(file, domainDir, 'ioredis')).toBe('a package other than the I/O-free kit entries');
    expect(domainViolation(file, domainDir, '@halo/kit/db')).toBe('a package other than the I/O-free kit entries');
    expect(domainViolation(file, domainDir, '@halo/kit/testing')).toBe('a package other than the I/O-free kit entries');
  });

  it('tells an entry of the kit from a way around it', () => {
    const entries = new Set(['config', 'testing']);
    const f = join(ROOT, 'gateway/src/main.ts');
    expect(kitImportViolation(f, '@halo/kit/config', entries)).toBeNull();
    expect(kitImportViolation(f, '@halo/kit', entries)).toMatch(/no root entry/);
    expect(kitImportViolation(f, '@halo/kit/dist/config', entries)).toMatch(/no entry/);
    expect(kitImportViolation(f, '@halo/kit/src/config/config', entries)).toMatch(/no entry/);
    expect(kitImportViolation(f, '@halo/kit/http', entries)).toMatch(/no entry/);
    expect(kitImportViolation(f, '../../packages/kit/src/config/config', entries)).toMatch(/by path/);
    expect(kitImportViolation(f, '@halo/kitchen', entries)).toBeNull();
    const setup = join(ROOT, 'tools/jest/test-servers.ts');
    expect(kitImportViolation(setup, '../../packages/kit/src/testing/test-redis', entries)).toBeNull();
    expect(kitImportViolation(setup, '../../packages/kit/src/testing/testing', entries)).toMatch(/by path/);
  });

  it('tells test code from production code', () => {
    const prod = (path: string, specifier: string) => testingViolation(join(ROOT, path), specifier);
    expect(prod('services/auth/src/service.ts', '@halo/kit/testing')).toMatch(/test helpers/);
    expect(prod('tools/src/launcher.ts', '@halo/kit/testing')).toMatch(/test helpers/);
    expect(prod('packages/kit/src/service/service.ts', '../testing')).toMatch(/test helpers/);
    expect(prod('packages/kit/src/service/service.ts', '../testing/test-redis')).toMatch(/test helpers/);
    expect(prod('services/auth/src/service.ts', '@halo/kit/service')).toBeNull();
    for (const test of [
      'services/auth/test/helpers.ts',
      'services/auth/src/domain/rules.test.ts',
      'e2e/helpers.ts',
      'tools/jest/test-servers.ts',
      'tools/src/test-registry.ts',
      'packages/kit/src/db/db.test.ts',
      'packages/kit/src/testing/testing.ts',
      'loadtest/src/bench.ts',
    ]) {
      expect(prod(test, '@halo/kit/testing')).toBeNull();
    }
  });

  it('tells a service’s own imports from another’s', () => {
    const dir = join(ROOT, 'services/payments');
    const f = join(dir, 'src/rest/routes.ts');
    expect(boundaryViolation(f, dir, 'payments', '../domain/payments')).toBeNull();
    expect(boundaryViolation(f, dir, 'payments', '@halo/proto')).toBeNull();
    expect(boundaryViolation(f, dir, 'payments', '@halo/catalog')).toMatch(/another service/);
    expect(boundaryViolation(f, dir, 'payments', '../../../../tools/src/dev-oidc')).toBe('leaves the service folder');
    expect(boundaryViolation(f, dir, 'payments', '../../../catalog/src/domain/catalog')).toBe('leaves the service folder');
  });
});
