// The charts' value references, generated from their values.schema.json by @adobe/jsonschema2md
// into helm/<chart>/docs/values/ (one page per value; values.md is the index the README links).
//
//   npm run helm:docs            rewrite them
//   npm run helm:docs -- --check exit 1 when a committed page differs (helm/test/docs.test.ts)
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jsonschema2md } from '@adobe/jsonschema2md';

const HELM = join(dirname(fileURLToPath(import.meta.url)), '..');
export const CHARTS = ['halo', 'halo-service'];

/** chart → { fileName: markdown } */
export function generate(chart) {
  const schema = JSON.parse(readFileSync(join(HELM, chart, 'values.schema.json'), 'utf8'));
  // A relative $id: the generator resolves the schema's own #/definitions through it.
  schema.$id = 'values.schema.json';
  const log = console.log;
  console.log = () => {}; // its progress lines
  try {
    const { markdown } = jsonschema2md(
      [{ fileName: 'values.schema.json', fullPath: join(HELM, chart, 'values.schema.json'), content: schema }],
      {
        includeReadme: false,
        header: true,
      },
    );
    return Object.fromEntries(markdown.map((m) => [m.fileName, m.content]));
  } finally {
    console.log = log;
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes('--check');
  let stale = 0;
  for (const chart of CHARTS) {
    const dir = join(HELM, chart, 'docs/values');
    const pages = generate(chart);
    if (check) {
      const committed = (() => {
        try {
          return readdirSync(dir);
        } catch {
          return [];
        }
      })();
      for (const name of new Set([...committed, ...Object.keys(pages)])) {
        const current = committed.includes(name) ? readFileSync(join(dir, name), 'utf8') : undefined;
        if (current !== pages[name]) {
          stale++;
          process.stderr.write(`${chart}/docs/values/${name} is stale: npm run helm:docs\n`);
        }
      }
    } else {
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir, { recursive: true });
      for (const [name, text] of Object.entries(pages)) writeFileSync(join(dir, name), text);
      process.stdout.write(`${chart}: ${Object.keys(pages).length} pages in ${chart}/docs/values/\n`);
    }
  }
  process.exit(stale ? 1 : 0);
}
