import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * Checks a Prometheus text exposition (what `/metrics` answers) as `promtool check metrics` does:
 * with promtool when it is installed (Debian's `prometheus` package), else with the same rules
 * written here, so a machine without it still refuses what Prometheus' linter refuses.
 */

/** promtool on PATH (or PROMTOOL), else undefined. */
export function findPromtool(): string | undefined {
  if (process.env.PROMTOOL) return existsSync(process.env.PROMTOOL) ? process.env.PROMTOOL : undefined;
  return (process.env.PATH ?? '')
    .split(delimiter)
    .map((dir) => join(dir, 'promtool'))
    .find((file) => existsSync(file));
}

/** What to install when promtool is missing: one line. */
export const PROMTOOL_MISSING = 'no promtool on PATH (or PROMTOOL); run apt-get install prometheus';

/** promtool's findings for `text` (none when it exits 0). */
export function promtoolFindings(promtool: string, text: string): string[] {
  const run = spawnSync(promtool, ['check', 'metrics'], { input: text, encoding: 'utf8' });
  if (run.error) throw run.error;
  if (run.status === 0) return [];
  const said = `${run.stdout}${run.stderr}`.split('\n').filter((line) => line.trim() !== '');
  return said.length > 0 ? said : [`promtool exited ${run.status}`];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
/** Units Prometheus' linter wants spelt out as base units (seconds, bytes), one `_`-separated word each. */
const NON_BASE_UNITS = new Set([
  'milliseconds',
  'microseconds',
  'nanoseconds',
  'minutes',
  'hours',
  'days',
  'weeks',
  'kilobytes',
  'megabytes',
  'gigabytes',
  'terabytes',
  'petabytes',
  'percent',
]);
/** Abbreviated units the linter refuses, one `_`-separated word each. */
const UNIT_ABBREVIATIONS = new Set(['s', 'ms', 'us', 'ns', 'sec', 'b', 'kb', 'mb', 'gb', 'tb', 'pb', 'm', 'h', 'd']);
/** Suffixes the format gives histogram and summary series. */
const RESERVED_SUFFIX = /_(bucket|count|sum)$/;

interface Family {
  name: string;
  type?: string;
  help?: string;
  samples: number;
}

/** The families of an exposition (HELP and TYPE lines, and the samples that follow them). */
function families(text: string): { families: Map<string, Family>; problems: string[] } {
  const found = new Map<string, Family>();
  const problems: string[] = [];
  const family = (name: string) => {
    let f = found.get(name);
    if (!f) found.set(name, (f = { name, samples: 0 }));
    return f;
  };
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const meta = /^#\s+(HELP|TYPE)\s+(\S+)(?:\s+(.*))?$/.exec(line);
    if (meta) {
      const [, kind, name, rest = ''] = meta as unknown as [string, string, string, string?];
      if (kind === 'HELP') family(name).help = rest;
      else family(name).type = rest.trim();
      continue;
    }
    if (line.startsWith('#')) continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(line)?.[1];
    if (!sample) {
      problems.push(`unreadable line: ${line}`);
      continue;
    }
    const owner = [sample, sample.replace(RESERVED_SUFFIX, '')].find((name) => found.has(name));
    if (owner) family(owner).samples += 1;
    else problems.push(`${sample}: sample without a TYPE line`);
  }
  return { families: found, problems };
}

/** The rules of Prometheus' metric linter (promlint) and the format, for one exposition. */
export function expositionFindings(text: string): string[] {
  const { families: found, problems } = families(text);
  for (const f of found.values()) {
    const { name, type } = f;
    if (!NAME.test(name)) problems.push(`${name}: not a valid metric name`);
    if (name.includes(':')) problems.push(`${name}: metric names should not contain ":"`);
    if (/[A-Z]/.test(name)) problems.push(`${name}: metric names should be written in snake_case not camelCase`);
    if (!f.help) problems.push(`${name}: no help text`);
    if (!type) problems.push(`${name}: no TYPE line`);
    if (type === 'counter' && !name.endsWith('_total')) problems.push(`${name}: counter metrics should have "_total" suffix`);
    if (type !== 'counter' && name.endsWith('_total')) problems.push(`${name}: non-counter metrics should not have "_total" suffix`);
    if (type !== 'histogram' && type !== 'summary' && RESERVED_SUFFIX.test(name)) {
      problems.push(`${name}: non-histogram and non-summary metrics should not have "${RESERVED_SUFFIX.exec(name)![0]}" suffix`);
    }
    for (const word of name.split('_')) {
      if (NON_BASE_UNITS.has(word)) problems.push(`${name}: use base units (seconds, bytes), not ${word}`);
      if (UNIT_ABBREVIATIONS.has(word)) problems.push(`${name}: metric names should not contain abbreviated units (${word})`);
    }
  }
  return problems;
}

/** Findings for `text`: promtool's when it is installed, else this module's own rules. */
export function metricsFindings(text: string, promtool = findPromtool()): string[] {
  return promtool ? promtoolFindings(promtool, text) : expositionFindings(text);
}
