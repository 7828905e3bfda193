import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * gateway/README.md's rule table says which one function holds each rule of the edge. A table
 * that names a function no longer there (renamed, moved, folded into another) misleads the next
 * reader; this keeps it true: every row's file exists and defines every name the row gives.
 */
const GATEWAY = resolve(__dirname, '..');
const README = readFileSync(resolve(GATEWAY, 'README.md'), 'utf8');

function rows(): { rule: string; file: string; names: string[] }[] {
  const start = README.indexOf('**Each rule, and the one place that holds it.**');
  const table = README.slice(start).split('\n\n')[1] ?? '';
  return table
    .split('\n')
    .slice(2)
    .map((line) => {
      const [rule = '', held = ''] = line.split(' | ').map((c) => c.replace(/^\|\s*|\s*\|$/g, ''));
      const ticks = [...held.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
      const file = ticks.find((t) => t.endsWith('.ts')) ?? '';
      return { rule, file, names: ticks.filter((t) => t !== file) };
    });
}

it('the table has a row for each rule the edge holds', () => {
  expect(rows().length).toBeGreaterThanOrEqual(15);
});

it.each(rows().map((r) => [r.rule, r] as const))('%s: held where the README says', (_rule, { file, names }) => {
  expect(file).toMatch(/\.ts$/);
  const path = file.startsWith('packages/') ? resolve(GATEWAY, '..', file) : resolve(GATEWAY, file);
  const source = readFileSync(path, 'utf8');
  expect(names.length).toBeGreaterThan(0);
  for (const name of names) {
    expect(source).toMatch(new RegExp(`(?:function|class|const|let)\\s+${name}\\b|^\\s+(?:async\\s+)?${name}\\s*\\(`, 'm'));
  }
});
