import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import { dirname, join, resolve as resolvePath } from 'node:path';
import { cachedDataVersionTag } from 'node:v8';
import { constants as vmConstants, Script } from 'node:vm';

/**
 * Runs a process's bundle (tools/src/bundle.ts) with V8's code cache (ADR 0012). Node 20 has no
 * compile cache of its own (`module.enableCompileCache()` came in 22.1), and each bundle is 9–10 MB
 * of JavaScript that every start parses and compiles again, most of it lazily while the service
 * starts. Here the bundle is compiled as a `vm.Script` given the bytes V8 serialised at the
 * previous start: V8 then skips compiling every function that start had compiled.
 *
 * The cache is written once the process is ready (the launcher asks over IPC; the launcher's own
 * when the system is ready), so the functions compiled lazily during start-up are in it. It lives
 * beside the bundle, named for V8's version and flags (`v8.cachedDataVersionTag()`), and starts
 * with a header naming the bundle's SHA-1 and the Node version: V8 itself checks only the source's
 * length, so a rebuilt bundle of the same size must never get the old code. A cache that does not
 * match, that V8 rejects (`cachedDataRejected`) or that cannot be read is ignored: the bundle is
 * compiled as without one, and the cache written anew once ready. Written to a temporary file
 * then renamed, so a reader never sees half a cache.
 *
 * The bundle runs as Node would run it as the main script: the CommonJS wrapper, a `require`
 * resolving from its folder, `__filename` and `__dirname`, `process.argv[1]` naming it, and
 * errors whose stack traces name the bundle's lines.
 */

/** The launcher's request to a child: write your code cache now (you are ready). */
export interface CodeCacheRequest {
  halo: 'code-cache';
}
export const CODE_CACHE_REQUEST: CodeCacheRequest = { halo: 'code-cache' };

/** How a start went: compiled from the cache, or without one (and why). */
/** `stale`: made for another bundle or Node, or damaged. */
export type CodeCacheOutcome = 'used' | 'absent' | 'stale' | 'rejected';

/** A child's answer to CODE_CACHE_REQUEST. */
export interface CodeCacheReport {
  halo: 'code-cache-report';
  outcome: CodeCacheOutcome;
  /** Bytes written (0: the cache used at this start was kept as it was). */
  written: number;
  error?: string;
}

export const isCodeCacheRequest = (m: unknown): m is CodeCacheRequest => (m as CodeCacheRequest | null)?.halo === 'code-cache';
export const isCodeCacheReport = (m: unknown): m is CodeCacheReport => (m as CodeCacheReport | null)?.halo === 'code-cache-report';

/** Emitted on `process` by `npm start` once Halo is ready: the launcher then writes its own code cache. */
export const SYSTEM_READY_EVENT = 'halo:ready';

const MAGIC = 'halo-v8-code-cache 1';

/**
 * The cache file of a bundle for this V8 (version and flags): a process started with other flags
 * keeps its own. Beside the bundle, or in `HALO_CODE_CACHE_DIR` when set (named after the bundle's
 * path), so that systems started side by side (tests) do not share one.
 */
export const codeCachePath = (bundle: string, dir = process.env.HALO_CODE_CACHE_DIR): string => {
  const file = `${bundle}.${cachedDataVersionTag().toString(16)}.v8cache`;
  return dir ? join(dir, file.replace(/^[\\/]+/, '').replace(/[\\/:]/g, '__')) : file;
};

const sha1 = (bytes: Buffer): string => createHash('sha1').update(bytes).digest('hex');

/** What the header must start with for the cache to be used with this bundle and this Node. */
const headerFor = (bundleDigest: string): string => `${MAGIC} ${process.version} ${process.arch} ${bundleDigest}`;

/**
 * The cached bytes when the file is this bundle's, for this Node, and whole; undefined otherwise.
 * The bytes' own digest is checked too: V8 does not checksum a code cache it is given, and
 * deserialising damaged bytes aborts the process.
 */
function readCache(file: string, header: string): { data: Buffer | undefined; outcome: CodeCacheOutcome } {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch {
    return { data: undefined, outcome: 'absent' };
  }
  const end = bytes.indexOf(10);
  const [prefix, digest] = [bytes.toString('latin1', 0, header.length), bytes.toString('latin1', header.length + 1, end)];
  const data = bytes.subarray(end + 1);
  if (end === -1 || prefix !== header || digest !== sha1(data)) return { data: undefined, outcome: 'stale' };
  return { data, outcome: 'used' };
}

/** Writes the cache atomically: a temporary file of this process, then a rename over the old one. */
function writeCache(file: string, header: string, data: Buffer): void {
  const temp = `${file}.${process.pid}.tmp`;
  try {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(temp, Buffer.concat([Buffer.from(`${header} ${sha1(data)}\n`, 'latin1'), data]));
    renameSync(temp, file);
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
}

export interface CachedBundle {
  outcome: CodeCacheOutcome;
  /**
   * Serialises what V8 has compiled so far and writes it, unless this start used a cache (which
   * then already holds the start's functions). Returns the bytes written.
   */
  writeCache(): number;
}

/**
 * Compiles and runs `bundle` as the main CommonJS module, with its code cache when there is a
 * usable one. Returns once the bundle's top level has run.
 */
export function runBundle(bundle: string): CachedBundle {
  const bytes = readFileSync(bundle);
  const header = headerFor(sha1(bytes));
  const cacheFile = codeCachePath(bundle);
  const cached = readCache(cacheFile, header);
  const script = new Script(Module.wrap(bytes.toString('utf8')), {
    filename: bundle,
    ...(cached.data ? { cachedData: cached.data } : {}),
    // `import()` inside the bundle (of an external package) resolves as in any main script.
    importModuleDynamically: vmConstants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  const outcome: CodeCacheOutcome = cached.data && script.cachedDataRejected ? 'rejected' : cached.outcome;
  const wrapper = script.runInThisContext({ displayErrors: true }) as (
    exports: unknown,
    require: NodeJS.Require,
    module: Module,
    filename: string,
    dirname: string,
  ) => void;
  const mod = new Module(bundle);
  mod.filename = bundle;
  const require = createRequire(bundle);
  mod.paths = require.resolve.paths('x') ?? [];
  // The bundle is the main module, as when run directly: `require.main === module` guards a
  // script's `main()` (the dev OpenID provider's, for one).
  require.main = mod;
  process.mainModule = mod;
  wrapper.call(mod.exports, mod.exports, require, mod, bundle, dirname(bundle));
  mod.loaded = true;
  return {
    outcome,
    writeCache() {
      if (outcome === 'used') return 0;
      const data = script.createCachedData();
      writeCache(cacheFile, header, data);
      return data.length;
    },
  };
}

/**
 * `node tools/dist/code-cache.js <bundle>`, as the launcher starts each process: the bundle runs as
 * if it were the main script, and writes its code cache when the launcher says it is ready.
 */
function main(): void {
  const given = process.argv[2];
  if (!given) throw new Error('usage: code-cache.js <bundle.js>');
  const bundle = resolvePath(given);
  // The bundle sees the command line it would have had run directly: node <bundle> [args].
  process.argv.splice(1, 1);
  const started = runBundle(bundle);
  // After the top level ran: the kit has unref'd the IPC channel, so this keeps nothing alive.
  process.on('message', (message: unknown) => {
    if (!isCodeCacheRequest(message) || !process.send) return;
    let report: CodeCacheReport;
    try {
      report = { halo: 'code-cache-report', outcome: started.outcome, written: started.writeCache() };
    } catch (err) {
      report = { halo: 'code-cache-report', outcome: started.outcome, written: 0, error: (err as Error).message };
    }
    process.send(report, () => undefined);
  });
}

if (require.main === module) main();
