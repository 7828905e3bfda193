import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildRenderer, rendererTests, render, renderError, renderText, SERVICE_CHART, type Renderer } from './render';

// Every test here needs the renderer (Go + Debian's libraries): skipped with one line without them.
const { it, beforeAll } = rendererTests('helm/render tests');
/**
 * helm/render against a small chart whose `helm template` output follows from Helm's documented
 * behaviour, so the renderer is held to Helm's rules and not only to the Halo chart: value
 * coalescing (null deletes a default, maps merge, lists are replaced), numbers from values as
 * float64 (1000000 prints as 1e+06, as in Helm), missing keys render empty, tpl/include/required,
 * .Files with .helmignore, .Capabilities, manifests in install order, hooks after them and
 * unknown hook types dropped, NOTES apart, kubeVersion checked.
 */
const MINI = join(__dirname, 'fixtures/mini');
const opts = { chart: MINI };
let renderer: Renderer;
beforeAll(() => {
  renderer = buildRenderer();
}, 120_000);
afterAll(() => renderer?.dispose());

it('coalesces -f values over values.yaml and renders the template functions as Helm does', () => {
  const r = render(renderer, [join(__dirname, 'fixtures/mini-override.yaml')], opts);
  const config = r.objects.find((o) => o.kind === 'ConfigMap' && o.metadata?.name === 'halo-mini')!;
  expect(config.data).toEqual({
    keep: 'default',
    drop: 'removed',
    nested: '{"a":1,"b":3}',
    big: '1e+06',
    missing: '',
    tpl: 'halo-2.0.0',
    file: 'hello from a file',
    ignored: '',
    kube: 'v1.33.0',
    apps: 'true',
    template: 'mini/templates/config.yaml',
    install: 'true',
    list: '- z\n',
  });
  expect(r.values).toMatchObject({ keep: 'default', nested: { a: 1, b: 3 }, list: ['z'] });
  expect(r.values).not.toHaveProperty('drop');
  expect(r.notes).toBe('Installed halo-mini.\n');
});

it('prints manifests in install order, then the hooks, as `helm template` does', () => {
  const text = renderText(renderer, [], opts);
  const heads = [...text.matchAll(/^# Source: (\S+)\nap.*\nkind: (\w+)\nmetadata:\n  name: (\S+)/gm)].map(
    (m) => `${m[2]} ${m[3]} (${m[1]})`,
  );
  expect(heads).toEqual([
    'Namespace ns (mini/templates/objects.yaml)',
    'ConfigMap halo-mini (mini/templates/config.yaml)',
    'Service svc (mini/templates/objects.yaml)',
    'Secret early-hook (mini/templates/objects.yaml)',
    'Job late-hook (mini/templates/objects.yaml)',
  ]);
  expect(text.startsWith('---\n# Source: mini/templates/objects.yaml\napiVersion: v1\nkind: Namespace\n')).toBe(true);
  expect(text).not.toContain('unknown-hook');
});

it('fails like Helm: required, and a kubeVersion the cluster does not meet', () => {
  expect(renderError(renderer, [join(__dirname, 'fixtures/mini-demand.yaml')], opts)).toMatch(
    /^Error: execution error at \(mini\/templates\/config\.yaml:\d+:\d+\): needed is required\n$/,
  );
  expect(renderError(renderer, [], { ...opts, kubeVersion: 'v1.24.0' })).toBe(
    'Error: chart requires kubeVersion: >=1.25.0-0 which is incompatible with Kubernetes v1.24.0\n',
  );
});

it('refuses a chart whose Chart.yaml dependency is not in charts/, as Helm does before `helm dependency build`', () => {
  const dir = mkdtempSync(join(tmpdir(), 'halo-no-deps-'));
  try {
    cpSync(SERVICE_CHART, dir, { recursive: true, filter: (src) => !src.includes('/charts') });
    expect(renderError(renderer, [join(SERVICE_CHART, 'ci/catalog.yaml')], { chart: dir })).toBe(
      'Error: found in Chart.yaml, but missing in charts/ directory: halo-lib\n',
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
