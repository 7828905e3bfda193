import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ROOT } from './render';

/**
 * The charts as a product: their values references (docs/values.md) are what `npm run helm:docs`
 * renders from values.schema.json and values.yaml today (through tools/dist: built by
 * `npm run build`), each chart's CHANGELOG names its Chart.yaml version, and the library's
 * version is the one both charts depend on.
 */
const HELM = join(ROOT, 'helm');
const chartOf = (name: string) =>
  parse(readFileSync(join(HELM, name, 'Chart.yaml'), 'utf8')) as { version: string; dependencies?: { name: string; version: string }[] };

describe('chart docs and versions', () => {
  it('the generated values references (docs/values.md) are current', () => {
    const run = spawnSync(process.execPath, [join(HELM, 'docs/values-docs.mjs'), '--check'], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });

  it.each(['halo', 'halo-service', 'halo-lib'])("%s: the CHANGELOG's newest entry is Chart.yaml's version", (name) => {
    const newest = readFileSync(join(HELM, name, 'CHANGELOG.md'), 'utf8').match(/^## (\S+)/m)?.[1];
    expect(newest).toBe(chartOf(name).version);
  });

  it.each(['halo', 'halo-service'])('%s depends on the library version in helm/halo-lib', (name) => {
    expect(chartOf(name).dependencies).toEqual([expect.objectContaining({ name: 'halo-lib', version: chartOf('halo-lib').version })]);
  });

  it("helm/README.md states the Helm versions whose null-merge the charts' docs rely on", () => {
    const readme = readFileSync(join(HELM, 'README.md'), 'utf8');
    for (const range of ['3.19.0–3.19.4', '3.20.1', '4.1.3']) expect(readme).toContain(range);
  });
});
