import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/**
 * The documentation's house rules (CONTRIBUTING "Documentation"): a README a newcomer reads in ten
 * minutes, links that lead somewhere, ADRs in one shape, and a repository that stands alone.
 */
const ROOT = resolve(__dirname, '../..');
const tracked = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).split('\n').filter(Boolean);
const markdown = tracked.filter((f) => f.endsWith('.md') && existsSync(join(ROOT, f)));
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

/** Relative link targets of a markdown text (`[text](target)`), outside code spans and fences. */
export function relativeLinks(text: string): string[] {
  const prose = text.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  const targets = [...prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
  return targets.filter((t) => !/^([a-z][a-z0-9+.-]*:|#|\/)/i.test(t));
}

describe('the documentation', () => {
  it('the README stays a newcomer’s page: at most 250 lines', () => {
    expect(read('README.md').split('\n').length).toBeLessThanOrEqual(250);
  });

  it('every relative link in a tracked markdown file leads to a file of the repository', () => {
    const broken: string[] = [];
    for (const file of markdown) {
      for (const target of relativeLinks(read(file))) {
        const path = decodeURIComponent(target.split('#')[0]!);
        if (path && !existsSync(resolve(ROOT, dirname(file), path))) broken.push(`${file} → ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('nothing cites files that live outside the repository', () => {
    const outside = /\.\.\/shared\/|\b(STACK-NOTES|STYLE|CONTRACT)\.md\b/;
    const sources = tracked.filter(
      (f) => /\.(ts|js|mjs|md|yaml|json)$/.test(f) && !f.includes('node_modules') && f !== 'tools/src/docs.test.ts',
    );
    const citing = sources.filter((f) => existsSync(join(ROOT, f)) && outside.test(read(f)));
    expect(citing).toEqual([]);
  });
});

describe('architecture decision records', () => {
  const records = markdown.filter((f) => /^docs\/adr\/\d{4}-.+\.md$/.test(f));
  const index = read('docs/adr/README.md');

  it.each(records)('%s: context, decision, consequences, at most one table, listed in the index', (file) => {
    const text = read(file);
    const sections = [...text.matchAll(/^## (.+)$/gm)].map((m) => m[1]);
    expect(sections.slice(0, 3)).toEqual(['Context', 'Decision', 'Consequences']);
    const tables = text.split('\n').filter((line) => /^\|\s*:?-{3,}/.test(line));
    expect(tables.length).toBeLessThanOrEqual(1);
    expect(index).toContain(`](${file.slice('docs/adr/'.length)})`);
  });

  it('relativeLinks finds links, not URLs, anchors or code', () => {
    expect(relativeLinks('[a](b.md#x) [u](https://x.y) [h](#top) `[c](d.md)` [r](/abs)')).toEqual(['b.md#x']);
  });
});
