import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { IMAGES_DATA, resolveNodeBase } from './containers/base-image';
import { podman, podmanMissing, podmanToLog, ROOT, tailOf } from './containers/podman';

/**
 * `npm run images [-- --only gateway,catalog] [-- --tag local] [-- --context DIR]`: builds every
 * image Halo ships with podman from deploy/Dockerfile, one after the other, on a base that works
 * without a registry (tools/src/containers/base-image.ts). Logs and a summary: .data/images/.
 */

export interface ImageSpec {
  /** The image's name under localhost/halo/, and the chart's component name. */
  name: string;
  /** The workspace folder, the Dockerfile's APP. */
  app: string;
}

export const IMAGES: readonly ImageSpec[] = [
  { name: 'gateway', app: 'gateway' },
  ...['auth', 'content', 'catalog', 'payments', 'chat', 'registry'].map((name) => ({ name, app: `services/${name}` })),
];

export interface Options {
  only: string[];
  tag: string;
  context: string;
  help: boolean;
}

export const USAGE = 'usage: npm run images [-- --only gateway,catalog] [--tag local] [--context DIR]';
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

/** The command line; throws on an unknown option or image. Relative paths are from `cwd`. */
export function parseArgs(argv: readonly string[], env: NodeJS.ProcessEnv, cwd: string): Options {
  const options: Options = { only: [], tag: env.HALO_IMAGE_TAG || 'local', context: ROOT, help: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    // npm passes a second `--` through: `npm run images -- --only x -- --tag y`.
    if (arg === '--') continue;
    if (arg === '-h' || arg === '--help') {
      options.help = true;
      continue;
    }
    const [flag, inline] =
      arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg];
    if (flag !== '--only' && flag !== '--tag' && flag !== '--context') throw new Error(`unknown argument ${arg}`);
    const value = inline ?? argv[++i];
    if (!value || (inline === undefined && value.startsWith('--'))) throw new Error(`${flag} needs a value`);
    if (flag === '--only') options.only.push(...value.split(',').filter(Boolean));
    else if (flag === '--tag') options.tag = value;
    else options.context = isAbsolute(value) ? value : resolve(cwd, value);
  }
  if (!TAG.test(options.tag)) throw new Error(`${options.tag} is not a valid image tag`);
  selectImages(options.only);
  return options;
}

/** The images to build, in IMAGES' order: all of them, or those named. */
export function selectImages(only: readonly string[]): ImageSpec[] {
  const unknown = only.filter((name) => !IMAGES.some((image) => image.name === name));
  if (unknown.length) throw new Error(`no image ${unknown.join(', ')} (there are ${IMAGES.map((i) => i.name).join(', ')})`);
  return IMAGES.filter((image) => only.length === 0 || only.includes(image.name));
}

/** The default value of a Dockerfile's `ARG name=value`, or undefined. */
export function dockerfileArgDefault(dockerfile: string, name: string): string | undefined {
  const match = dockerfile.match(new RegExp(`^\\s*ARG\\s+${name}=(\\S+)\\s*$`, 'm'));
  return match?.[1]?.replace(/^(["'])(.*)\1$/, '$2');
}

export const imageRef = (name: string, tag: string): string => `localhost/halo/${name}:${tag}`;

export interface BuildSettings {
  base: string;
  tag: string;
  context: string;
  version: string;
  revision: string;
  source: string;
  /** A CA bundle for npm inside the build (a TLS-intercepting proxy), or undefined. */
  ca: string | undefined;
}

/**
 * podman's arguments to build one image. The OCI labels go as --label too: podman 4.3 (buildah
 * 1.28) hands back a wholly cached image whose LABEL steps expanded the build args of an earlier
 * build (containers/buildah#5501), a --label is applied to every build.
 */
export function buildArgs(image: ImageSpec, s: BuildSettings): string[] {
  const buildArg = (name: string, value: string) => ['--build-arg', `${name}=${value}`];
  const label = (key: string, value: string) => ['--label', `org.opencontainers.image.${key}=${value}`];
  return [
    'build',
    '-f',
    join(ROOT, 'deploy/Dockerfile'),
    '--ignorefile',
    join(ROOT, 'deploy/Dockerfile.dockerignore'),
    ...buildArg('APP', image.app),
    ...buildArg('NODE_IMAGE', s.base),
    ...buildArg('VERSION', s.version),
    ...buildArg('REVISION', s.revision),
    ...buildArg('SOURCE', s.source),
    ...label('version', s.version),
    ...label('revision', s.revision),
    ...label('source', s.source),
    ...(s.ca ? ['--secret', `id=ca,src=${s.ca}`] : []),
    '-t',
    imageRef(image.name, s.tag),
    s.context,
  ];
}

/** The CA bundle to hand the builds: npm's cafile, else NODE_EXTRA_CA_CERTS, else the system's. */
export function pickCaBundle(npmCafile: string | undefined, env: NodeJS.ProcessEnv, exists: (file: string) => boolean): string | undefined {
  const candidates = [npmCafile, env.NODE_EXTRA_CA_CERTS, '/etc/ssl/certs/ca-certificates.crt'];
  // `npm config get` prints "null" or "undefined" for an unset key.
  return candidates.find((file): file is string => !!file && file !== 'null' && file !== 'undefined' && exists(file));
}

/** A remote URL without user and password, fit for an image label. */
export function withoutCredentials(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, '$1');
}

export interface BuildResult {
  name: string;
  image: string;
  /** The image's size, or null when its build failed. */
  bytes: number | null;
  seconds: number;
  ok: boolean;
}

/** The table printed at the end. */
export function formatTable(results: readonly BuildResult[], totalSeconds: number): string {
  const rows = [
    ['image', 'MB', 'seconds'],
    ...results.map((r) => [r.image, r.bytes === null ? 'failed' : (r.bytes / 1e6).toFixed(1), r.seconds.toFixed(1)]),
    ['total', '', totalSeconds.toFixed(1)],
  ];
  const width = (column: number) => Math.max(...rows.map((row) => row[column]!.length));
  return rows
    .map(([image, mb, seconds]) => `${image!.padEnd(width(0))}  ${mb!.padStart(width(1))}  ${seconds!.padStart(width(2))}`)
    .join('\n');
}

function git(args: string[]): string | undefined {
  const result = spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() || undefined : undefined;
}

/** origin's URL, else the first remote's, else unknown. */
function gitSource(): string {
  const remotes = git(['remote'])?.split('\n') ?? [];
  const remote = remotes.includes('origin') ? 'origin' : remotes[0];
  const url = remote && git(['remote', 'get-url', remote]);
  return url ? withoutCredentials(url) : 'unknown';
}

function npmCafile(): string | undefined {
  const result = spawnSync('npm', ['config', 'get', 'cafile'], { cwd: ROOT, encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

const secondsSince = (since: number) => (Date.now() - since) / 1000;
const shown = (file: string) => relative(process.cwd(), file) || file;

async function buildImage(image: ImageSpec, settings: BuildSettings): Promise<BuildResult> {
  const ref = imageRef(image.name, settings.tag);
  const logFile = join(IMAGES_DATA, `${image.name}.log`);
  rmSync(logFile, { force: true });
  console.log(`${image.name}: building ${ref} (log ${shown(logFile)})`);
  const started = Date.now();
  const code = await podmanToLog(buildArgs(image, settings), logFile);
  const took = secondsSince(started);
  if (code !== 0) {
    console.log(`${image.name}: FAILED after ${took.toFixed(0)} s (exit ${code}); the end of ${shown(logFile)}:`);
    console.log(tailOf(logFile, 30));
    return { name: image.name, image: ref, bytes: null, seconds: took, ok: false };
  }
  const size = await podman(['image', 'inspect', '--format', '{{.Size}}', ref]);
  const bytes = Number(size.stdout.trim());
  console.log(`${image.name}: built in ${took.toFixed(0)} s, ${(bytes / 1e6).toFixed(1)} MB`);
  return { name: image.name, image: ref, bytes, seconds: took, ok: true };
}

async function main(): Promise<number> {
  const missing = podmanMissing();
  if (missing) {
    console.error(missing);
    return 1;
  }
  let options: Options;
  try {
    options = parseArgs(process.argv.slice(2), process.env, process.env.INIT_CWD ?? process.cwd());
  } catch (err) {
    console.error(`${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  if (options.help) {
    console.log(USAGE);
    return 0;
  }
  if (!existsSync(options.context)) {
    console.error(`--context ${options.context}: no such directory`);
    return 2;
  }
  const started = Date.now();
  mkdirSync(IMAGES_DATA, { recursive: true });
  const dockerfile = readFileSync(join(ROOT, 'deploy/Dockerfile'), 'utf8');
  const preferred = process.env.NODE_IMAGE || dockerfileArgDefault(dockerfile, 'NODE_IMAGE');
  if (!preferred) throw new Error('deploy/Dockerfile has no ARG NODE_IMAGE=<default>; set NODE_IMAGE');
  const base = await resolveNodeBase(preferred);
  const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
  const settings: BuildSettings = {
    base,
    tag: options.tag,
    context: options.context,
    version,
    revision: git(['rev-parse', 'HEAD']) ?? 'unknown',
    source: gitSource(),
    ca: pickCaBundle(npmCafile(), process.env, existsSync),
  };
  console.log(`base ${base}, tag ${settings.tag}, ${settings.ca ? `CA bundle ${settings.ca}` : 'no CA bundle'}`);
  const results: BuildResult[] = [];
  // One at a time: a build uses both cores, and the dependency layer built first is then reused.
  for (const image of selectImages(options.only)) results.push(await buildImage(image, settings));
  const totalSeconds = secondsSince(started);
  console.log(`\n${formatTable(results, totalSeconds)}`);
  const summary = {
    base,
    tag: settings.tag,
    images: results.map(({ name, image, bytes, seconds, ok }) => ({ name, image, bytes, seconds: Number(seconds.toFixed(1)), ok })),
    totalSeconds: Number(totalSeconds.toFixed(1)),
    at: new Date().toISOString(),
  };
  writeFileSync(join(IMAGES_DATA, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
  const failed = results.filter((r) => !r.ok).map((r) => r.name);
  if (failed.length) console.error(`failed: ${failed.join(', ')}`);
  return failed.length ? 1 : 0;
}

if (require.main === module) {
  main().then(
    (code) => (process.exitCode = code),
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : String(err));
      process.exitCode = 1;
    },
  );
}
