import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
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
export const APT_PACKAGES =
  'golang-go golang-github-masterminds-sprig-dev golang-k8s-sigs-yaml-dev golang-github-xeipuuv-gojsonschema-dev golang-github-burntsushi-toml-dev golang-github-gobwas-glob-dev';

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
      `cannot build the chart renderer (helm/render): ${build.error?.message ?? build.stderr}\n` +
        `It needs Debian's Go and libraries: apt-get install -y ${APT_PACKAGES}`,
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
  const args = ['--chart', opts.chart ?? CHART, '--release-name', opts.release ?? RELEASE.name, '--namespace', RELEASE.namespace, '--output', output];
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
