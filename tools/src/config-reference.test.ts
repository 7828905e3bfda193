import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { env, z } from '@halo/kit/config';
import { PAGE, processShapes, referenceRows, renderPage, sourceModule, type ProcessShape } from './config-reference';

/**
 * docs/configuration.md is generated from the zod shapes every process validates its environment
 * with (`npm run docs:config`): the committed page is what the shapes give, and every variable the
 * production code reads is in a shape, so the page shows it.
 */
const ROOT = resolve(__dirname, '../..');
const committed = readFileSync(PAGE, 'utf8');
const processes = processShapes(sourceModule);

/**
 * Variables the code reads that no shape declares, each for a reason: other programs' variables
 * (Node's, glibc's, Apollo's, the OpenTelemetry SDK's: the page says so in one hand-written
 * line) and what only tests set. A prefix ends with `_*`.
 */
const NOT_IN_A_SHAPE: Record<string, string> = {
  'OTEL_*': "the OpenTelemetry SDK's (packages/kit/src/tracing.ts only asks whether tracing is on)",
  NODE_ENV: "Node's convention, read where Apollo Server's default depends on it (graphql-lean.ts); Halo's own is HALO_ENV",
  NODE_OPTIONS: "Node's, which the launcher passes on to the gateway",
  MALLOC_MMAP_THRESHOLD_: "glibc's, which the launcher passes on to the processes it starts",
  APOLLO_TELEMETRY_DISABLED: "Apollo's, which the gateway sets before Apollo reads it",
  TEST_DATABASE_URL: 'tests only (@halo/kit/testing)',
  PATH: 'tests only (@halo/kit/testing, test-redis.ts: where redis-server is)',
};
const allowed = (name: string) =>
  Object.keys(NOT_IN_A_SHAPE).some((entry) => (entry.endsWith('_*') ? name.startsWith(entry.slice(0, -1)) : name === entry));

/** Where production code reads the environment: every service, the gateway, the kit, `npm start`. */
function productionFiles(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
      const path = join(dir, e.name);
      if (e.isDirectory()) return walk(path);
      return /\.[cm]?[jt]s$/.test(e.name) && !/\.(test|d)\.ts$/.test(e.name) ? [path] : [];
    });
  const services = readdirSync(resolve(ROOT, 'services')).map((s) => resolve(ROOT, 'services', s, 'src'));
  const launcher = readdirSync(resolve(ROOT, 'tools/src'))
    .filter((f) => /^(launcher.*|start|dev-oidc|code-cache)\.ts$/.test(f))
    .map((f) => resolve(ROOT, 'tools/src', f));
  return [
    ...[...services, resolve(ROOT, 'gateway/src'), resolve(ROOT, 'packages/kit/src')].filter(existsSync).flatMap(walk),
    ...launcher,
    resolve(ROOT, 'tools/bin/start.js'),
  ];
}

const ENV_RECORDS = new Set(['env', 'source', 'vars']);
const VARIABLE = /^[A-Z][A-Z0-9_]*$/;

/** `process.env.X`, `env.X`, `opts.env?.X`, `env['X']`: the variables a file reads, with their lines (comments and strings are not reads). */
function envReads(file: string, text = readFileSync(file, 'utf8')): { name: string; line: number }[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: { name: string; line: number }[] = [];
  const isRecord = (e: ts.Expression) =>
    (ts.isIdentifier(e) && ENV_RECORDS.has(e.text)) || (ts.isPropertyAccessExpression(e) && e.name.text === 'env');
  const add = (name: string, node: ts.Node) => {
    if (VARIABLE.test(name)) found.push({ name, line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1 });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isPropertyAccessExpression(node) && isRecord(node.expression)) add(node.name.text, node);
    else if (ts.isElementAccessExpression(node) && isRecord(node.expression) && ts.isStringLiteralLike(node.argumentExpression)) {
      add(node.argumentExpression.text, node);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const reads = productionFiles().flatMap((file) => envReads(file).map((r) => ({ ...r, at: `${relative(ROOT, file)}:${r.line}` })));

it('docs/configuration.md is what the shapes generate (`npm run docs:config` rewrites it)', () => {
  expect(renderPage(processes, committed)).toBe(committed);
});

it('every variable production code reads is in a shape, so the page shows it (or on the short allow-list, with its reason)', () => {
  const declared = new Set(processes.flatMap((p) => Object.keys(p.shape)));
  const missing = reads.filter((r) => !declared.has(r.name) && !allowed(r.name)).map((r) => `${r.name} (${r.at})`);
  expect(missing).toEqual([]);
});

it('the allow-list names only variables the code still reads, and none that a shape declares', () => {
  const declared = [...new Set(processes.flatMap((p) => Object.keys(p.shape)))];
  for (const entry of Object.keys(NOT_IN_A_SHAPE)) {
    const matches = (name: string) => (entry.endsWith('_*') ? name.startsWith(entry.slice(0, -1)) : name === entry);
    expect([entry, reads.some((r) => matches(r.name))]).toEqual([entry, true]);
    expect(declared.filter(matches)).toEqual([]);
  }
});

describe('the checks are not rubber stamps', () => {
  const withVariable = (extra: z.ZodRawShape): ProcessShape[] =>
    processes.map((p) => (p.process === 'payments' ? { ...p, shape: { ...p.shape, ...extra } as ProcessShape['shape'] } : p));

  it('a changed description, or a new variable, makes the page stale', () => {
    const described = withVariable({ PAYMENTS_CURRENCY: z.string().default('USD').describe('another meaning') });
    expect(renderPage(described, committed)).not.toBe(committed);
    const added = withVariable({ PAYMENTS_NEW_SETTING: env.int(1).describe('a setting the page lacks') });
    expect(renderPage(added, committed)).toContain(
      '| `PAYMENTS_NEW_SETTING` | payments | `1` | an integer ≥ 0 | a setting the page lacks |',
    );
  });

  it('a variable without a description, or a description linking to no file, is refused', () => {
    expect(() => referenceRows(withVariable({ PAYMENTS_UNDESCRIBED: env.int(1) }))).toThrow(/PAYMENTS_UNDESCRIBED \(payments\)/);
    const badLink = withVariable({ PAYMENTS_LINKED: env.int(1).describe('see [there](docs/no-such-page.md)') });
    expect(() => referenceRows(badLink)).toThrow(/docs\/no-such-page\.md, which does not exist/);
  });

  it('envReads finds process.env, env records and string keys, not comments or the env.* helpers', () => {
    const text = [
      'const a = process.env.HALO_A;',
      "const b = opts.env?.HALO_B ?? env['HALO_C'];",
      '// process.env.HALO_COMMENTED',
      'const d = env.int(3) && source.HALO_D;',
    ].join('\n');
    expect(envReads('x.ts', text).map((r) => r.name)).toEqual(['HALO_A', 'HALO_B', 'HALO_C', 'HALO_D']);
  });
});
