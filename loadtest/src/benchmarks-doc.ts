/** docs/benchmarks.md is written by several benchmarks, each owning its sections. */

const HEADER = `# Benchmarks

Produced by \`npm run bench\` (loadtest/src/bench.ts; method and knobs in loadtest/README.md). The
headline is the first section, the gateways compared pinned and paired: ONE run, the load
generator (autocannon) on one CPU and every server process on the other, every ratio taken inside
a round and shown as the median over the rounds with its min–max, and ONE summary table that also
carries the payments (S3) and fan-out (S5) key figures. Compare ratios, not absolute numbers.
Sections are rewritten by the run of their mode and kept otherwise.
`;

/**
 * Replaces (or adds) this mode's section, keeping the others. A new headline section goes right
 * after the header, before the older ones; others are appended.
 */
export function mergeSection(doc: string, mode: string, section: string, headline = false): string {
  const start = `<!-- bench:${mode} -->`;
  const end = `<!-- /bench:${mode} -->`;
  const block = `${start}\n${section}${end}\n`;
  const body = doc.startsWith('# Benchmarks') ? doc : HEADER;
  const i = body.indexOf(start);
  const j = body.indexOf(end);
  if (i !== -1 && j !== -1) return body.slice(0, i) + block + body.slice(j + end.length + 1);
  if (headline) {
    const first = body.indexOf('<!-- bench:');
    if (first !== -1) return `${body.slice(0, first)}${block}\n${body.slice(first)}`;
  }
  return `${body.trimEnd()}\n\n${block}`;
}
