/**
 * CONTRIBUTING.md's rule for a commit's subject, as the commit-msg hook (.githooks/commit-msg)
 * checks it: `area: summary`, at most 72 characters, lower case after the colon, no full stop,
 * the area one of those CONTRIBUTING.md's "Commits" names (read from there: the list has one home).
 */

export const MAX_SUBJECT_LENGTH = 72;

const RULE = `\`area: summary\`, at most ${MAX_SUBJECT_LENGTH} characters, lower case after the colon, no full stop`;

/** Subjects git writes itself (merges, reverts) or that name one to fold in: not held to the rule. */
const EXEMPT = /^(fixup|squash|amend)! |^Merge |^Revert "/;

/** The areas of CONTRIBUTING.md's "Commits" section: the backquoted words after "The area is". */
export function areasOf(contributing: string): string[] {
  const section = contributing.split(/^## /m).find((s) => s.startsWith('Commits\n')) ?? '';
  const list = /The\s+area\s+is([\s\S]*?)(?:\n\s*\n|\n- |$)/.exec(section)?.[1] ?? '';
  return [...new Set([...list.matchAll(/`([a-z][a-z0-9-]*)`/g)].map((m) => m[1]!))];
}

/** The subject git records: the first line that is neither blank nor a comment. */
export function subjectOf(message: string, commentChar = '#'): string {
  const lines = message.split('\n').map((line) => line.trimEnd());
  return lines.find((line) => line.trim() !== '' && !line.startsWith(commentChar)) ?? '';
}

/** A summary's first word written like a sentence's (`Add`, `The`), not a name in capitals (`README`, `GraphQL`). */
function startsLikeASentence(summary: string): string | undefined {
  const word = (summary.split(/\s/)[0] ?? '').replace(/['’]s$/, '').replace(/[^\p{L}\p{N}_]+$/u, '');
  return /^\p{Lu}\p{Ll}*$/u.test(word) ? word : undefined;
}

/** What is wrong with `subject` (none: it keeps the rule, or is exempt). */
export function subjectProblems(subject: string, areas: readonly string[]): string[] {
  if (subject === '' || EXEMPT.test(subject)) return [];
  const problems: string[] = [];
  const length = [...subject].length;
  if (length > MAX_SUBJECT_LENGTH) problems.push(`it is ${length} characters long`);
  const parts = /^([^:]*): (.*)$/.exec(subject);
  if (!parts) return [`it is not \`area: summary\``, ...problems];
  const [, area = '', summary = ''] = parts;
  // An area may name a folder inside it: `docs/adr`, `e2e/faults`.
  const [base = '', ...folders] = area.split('/');
  if (!areas.includes(base) || !folders.every((f) => /^[a-z0-9._-]+$/.test(f))) problems.push(`\`${area}\` is not an area`);
  if (summary.trim() === '' || summary !== summary.trimStart()) problems.push('the summary after `area: ` is missing');
  const word = startsLikeASentence(summary);
  if (word) problems.push(`the summary starts with a capital ("${word}")`);
  if (subject.endsWith('.')) problems.push('it ends with a full stop');
  return problems;
}

/** The hook's one line for a commit message it refuses, or undefined when it keeps the rule. */
export function checkCommitMessage(message: string, contributing: string, commentChar = '#'): string | undefined {
  const areas = areasOf(contributing);
  if (areas.length === 0) return 'CONTRIBUTING.md\'s "Commits" names no areas ("The area is …"): the subject cannot be checked';
  const problems = subjectProblems(subjectOf(message, commentChar), areas);
  if (problems.length === 0) return undefined;
  return `subject refused: ${problems.join('; ')}. CONTRIBUTING.md "Commits": ${RULE}; areas: ${areas.join(', ')}`;
}
