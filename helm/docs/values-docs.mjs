// Each chart's values reference, helm/<chart>/docs/values.md: one page, a row per value path,
// rendered from its values.schema.json and values.yaml by tools/src/values-reference.ts.
//
//   npm run helm:docs            rewrite them (builds tools/ first)
//   npm run helm:docs -- --check exit 1 when a committed page differs (helm/test/docs.test.ts)
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { renderValuesReference } from '../../tools/dist/values-reference.js';

const HELM = join(dirname(fileURLToPath(import.meta.url)), '..');
export const CHARTS = ['halo', 'halo-service'];
export const pageOf = (chart) => join(HELM, chart, 'docs/values.md');

/** The reference page of `chart` as its schema and values.yaml make it today. */
export function generate(chart) {
  const schema = JSON.parse(readFileSync(join(HELM, chart, 'values.schema.json'), 'utf8'));
  const values = parse(readFileSync(join(HELM, chart, 'values.yaml'), 'utf8'));
  return renderValuesReference(schema, values);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes('--check');
  let stale = 0;
  for (const chart of CHARTS) {
    const page = generate(chart);
    if (!check) {
      writeFileSync(pageOf(chart), page);
      process.stdout.write(`helm/${chart}/docs/values.md written\n`);
      continue;
    }
    let committed;
    try {
      committed = readFileSync(pageOf(chart), 'utf8');
    } catch {
      committed = undefined;
    }
    if (committed !== page) {
      stale++;
      process.stderr.write(`helm/${chart}/docs/values.md is stale: npm run helm:docs\n`);
    }
  }
  process.exit(stale ? 1 : 0);
}
