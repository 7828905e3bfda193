import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { K8sObject } from './k8s-schemas';

/**
 * The chart renderer (helm/render, Go + Debian's sprig): built once per test run into a temp
 * directory, then called like `helm template`.
 */
export const ROOT = resolve(__dirname, '../..');
export const CHART = join(ROOT, 'helm/halo');
export const SERVICE_CHART = join(ROOT, 'helm/halo-service');
export const RELEASE = { name: 'halo', namespace: 'halo' };

const GOCODE = '/usr/share/gocode/src';

/** Debian's Go library folders (under GOCODE) the renderer imports. */
const GO_LIBRARIES = [
  'github.com/Masterminds/sprig',
  'sigs.k8s.io/yaml',
  'github.com/xeipuuv/gojsonschema',
  'github.com/BurntSushi/toml',
  'github.com/gobwas/glob',
];

/** The one command that installs what the renderer needs (Debian/Ubuntu; .ci/run runs it too). */
export const SETUP_COMMAND = 'npm run setup:chart-tests';

/** What is missing to build the renderer here, or undefined when it can be built. */
export function rendererMissing(): string | undefined {
  if (spawnSync('go', ['version'], { stdio: 'ignore' }).status !== 0) return 'no Go toolchain (go) on PATH';
  const absent = GO_LIBRARIES.filter((lib) => !existsSync(join(GOCODE, lib)));
  return absent.length ? `Go libraries missing under ${GOCODE}: ${absent.join(', ')}` : undefined;
}

/** Whether this machine skips the renderer's tests, saying so once in one line per file. */
function skipRendererTests(what: string): boolean {
  const missing = rendererMissing();
  if (!missing || process.env.HALO_REQUIRE_CHART_TESTS) return false;
  process.stderr.write(`${what}: skipped, the chart renderer cannot be built here (${missing}); run ${SETUP_COMMAND}\n`);
  return true;
}

/**
 * Jest's `describe`, `it` and `beforeAll` for a file whose tests all need the renderer. Without Go
 * and Debian's libraries they are skipped with one line naming the setup command — unless
 * HALO_REQUIRE_CHART_TESTS is set (CI), where building the renderer fails with that line instead.
 */
export function rendererTests(what: string): { describe: jest.Describe; it: jest.It; beforeAll: typeof beforeAll } {
  if (!skipRendererTests(what)) return { describe, it, beforeAll };
  return { describe: describe.skip, it: it.skip, beforeAll: () => undefined };
}

/** `describe` for the tests of a file that need the renderer (built once for them), as above. */
export function describeWithRenderer(name: string, body: (renderer: () => Renderer) => void): void {
  if (skipRendererTests(name)) {
    describe.skip(name, () => body(() => undefined as unknown as Renderer));
    return;
  }
  describe(name, () => {
    let renderer: Renderer | undefined;
    beforeAll(() => {
      renderer = buildRenderer();
    }, 120_000);
    afterAll(() => renderer?.dispose());
    body(() => renderer!);
  });
}

export interface Renderer {
  bin: string;
  dispose(): void;
}

/**
 * `go build` in GOPATH mode against Debian's Go libraries. Debian installs sprig and semver v3 at
 * their v1 paths; a temp GOPATH entry maps the `/v3` import paths onto them.
 */
export function buildRenderer(): Renderer {
  const dir = mkdtempSync(join(tmpdir(), 'halo-helm-render-'));
  const gopath = join(dir, 'gopath');
  for (const pkg of ['sprig', 'semver']) {
    mkdirSync(join(gopath, 'src/github.com/Masterminds', pkg), { recursive: true });
    symlinkSync(join(GOCODE, 'github.com/Masterminds', pkg), join(gopath, 'src/github.com/Masterminds', pkg, 'v3'));
  }
  const bin = join(dir, 'halo-helm-render');
  const build = spawnSync('go', ['build', '-o', bin, '.'], {
    cwd: join(ROOT, 'helm/render'),
    env: { ...process.env, GO111MODULE: 'off', GOPATH: `${gopath}:/usr/share/gocode`, GOFLAGS: '' },
    encoding: 'utf8',
  });
  if (build.error || build.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(
      `cannot build the chart renderer (helm/render; install what it needs with ${SETUP_COMMAND}): ${rendererMissing() ?? build.error?.message ?? build.stderr.trim()}`,
    );
  }
  // `helm dependency build` for both charts: their library (helm/halo-lib) into charts/.
  for (const chart of [CHART, SERVICE_CHART]) {
    const deps = spawnSync(bin, ['--chart', chart, '--dependency-build'], { encoding: 'utf8' });
    if (deps.status !== 0) throw new Error(`dependency build of ${chart} failed: ${deps.stderr}`);
  }
  return { bin, dispose: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface Rendered {
  /** What `helm template` prints. */
  manifest: string;
  notes: string;
  /** The coalesced values the templates saw. */
  values: Record<string, unknown>;
  objects: K8sObject[];
}

export interface RenderOptions {
  /** Another chart directory (the renderer's own tests); default helm/halo. */
  chart?: string;
  kubeVersion?: string;
  /** Default RELEASE.name (halo). */
  release?: string;
}

function run(renderer: Renderer, valueFiles: string[], output: 'json' | 'text', opts: RenderOptions = {}) {
  const args = [
    '--chart',
    opts.chart ?? CHART,
    '--release-name',
    opts.release ?? RELEASE.name,
    '--namespace',
    RELEASE.namespace,
    '--output',
    output,
  ];
  if (opts.kubeVersion) args.push('--kube-version', opts.kubeVersion);
  for (const f of valueFiles) args.push('-f', f);
  return spawnSync(renderer.bin, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}

export function render(renderer: Renderer, valueFiles: string[], opts?: RenderOptions): Rendered {
  const out = run(renderer, valueFiles, 'json', opts);
  if (out.status !== 0) throw new Error(`render failed: ${out.stderr}`);
  const parsed = JSON.parse(out.stdout) as Omit<Rendered, 'objects'>;
  return { ...parsed, objects: parseObjects(parsed.manifest) };
}

/** The text `helm template` would print (what examples/ holds). */
export function renderText(renderer: Renderer, valueFiles: string[], opts?: RenderOptions): string {
  const out = run(renderer, valueFiles, 'text', opts);
  if (out.status !== 0) throw new Error(`render failed: ${out.stderr}`);
  return out.stdout;
}

/** Renders expecting a failure; returns the error Helm would print. */
export function renderError(renderer: Renderer, valueFiles: string[], opts?: RenderOptions): string {
  const out = run(renderer, valueFiles, 'json', opts);
  if (out.status === 0) throw new Error('expected the render to fail, and it succeeded');
  return out.stderr;
}

/** Every YAML document of a stream, parsed strictly (duplicate keys are errors). */
export function parseObjects(stream: string): K8sObject[] {
  return parseAllDocuments(stream, { uniqueKeys: true })
    .map((doc) => {
      if (doc.errors.length) throw new Error(`invalid YAML: ${doc.errors.map((e) => e.message).join('; ')}`);
      return doc.toJS() as K8sObject | null;
    })
    .filter((o): o is K8sObject => o !== null);
}

/** The Secret keys a container's environment reads (`env` as name → value or valueFrom), sorted. */
export function secretsReadBy(env: Record<string, unknown>): string[] {
  return Object.values(env)
    .flatMap((v) => {
      const ref = (v as { secretKeyRef?: { key: string } } | undefined)?.secretKeyRef;
      return ref ? [ref.key] : [];
    })
    .sort();
}
