import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { areasOf, checkCommitMessage, subjectOf, subjectProblems } from './commit-subject';

const CONTRIBUTING = readFileSync(resolve(__dirname, '../../CONTRIBUTING.md'), 'utf8');
const AREAS = ['kit', 'gateway', 'docs', 'helm', 'e2e', 'tools'];

describe('areasOf', () => {
  it('reads the areas from the "Commits" section of CONTRIBUTING.md', () => {
    const areas = areasOf(CONTRIBUTING);
    expect(areas).toEqual(expect.arrayContaining(['kit', 'client', 'gateway', 'docs', 'helm', 'tools', 'loadtest']));
    for (const area of areas) expect(area).toMatch(/^[a-z][a-z0-9-]*$/);
  });

  it('takes the backquoted words after "The area is" in that section only, across wrapped lines', () => {
    const doc = [
      '## Other',
      'The area is `nope`.',
      '## Commits',
      '- Subject: `area: summary`, short. The',
      '  area is the folder: `kit`, `client` (the SDK), `e2e`,',
      '  `kit`.',
      '- A body that says `why`.',
      '',
    ].join('\n');
    expect(areasOf(doc)).toEqual(['kit', 'client', 'e2e']);
    expect(areasOf('## Commits\nNo list.\n')).toEqual([]);
  });
});

describe('subjectOf', () => {
  it('is the first line that is neither blank nor a comment, without trailing blanks', () => {
    expect(subjectOf('\n# Please enter the commit message\n\nkit: a thing  \n\nWhy.\n')).toBe('kit: a thing');
    expect(subjectOf('; comment\nkit: a thing\n', ';')).toBe('kit: a thing');
    expect(subjectOf('# only comments\n')).toBe('');
  });
});

describe('subjectProblems', () => {
  it.each([
    'helm: one generated values reference page per chart',
    'kit: GATEWAY_ID_HEADER declared once, beside the service token header',
    'gateway: GraphQL variables cap is the kit’s JSON depth cap',
    'docs: README a newcomer’s page again; the rest in docs/',
    'docs/benchmarks: the response cache on the lean path, measured',
    'e2e: 429 before a stream',
    `tools: ${'x'.repeat(72 - 'tools: '.length)}`,
  ])('keeps %j', (subject) => {
    expect(subjectProblems(subject, AREAS)).toEqual([]);
  });

  it.each([
    'fixup! kit: a thing',
    'squash! Kit: A Thing.',
    'amend! kit: a thing',
    "Merge branch 'issue-28c'",
    'Revert "gateway: no node-fetch request per subgraph fetch"',
    '',
  ])('leaves %j to git (merges, reverts, fixups)', (subject) => {
    expect(subjectProblems(subject, AREAS)).toEqual([]);
  });

  it.each([
    ['add a thing', ['it is not `area: summary`']],
    ['kit:a thing', ['it is not `area: summary`']],
    ['bench: a run', ['`bench` is not an area']],
    ['docs, helm: both', ['`docs, helm` is not an area']],
    ['docs/Bench: a run', ['`docs/Bench` is not an area']],
    ['kit:  a thing', ['the summary after `area: ` is missing']],
    ['kit: Add a thing', ['the summary starts with a capital ("Add")']],
    ["kit: Studio's page", ['the summary starts with a capital ("Studio")']],
    ['kit: a thing.', ['it ends with a full stop']],
    [`tools: ${'x'.repeat(73 - 'tools: '.length)}`, ['it is 73 characters long']],
    ['Kit: A thing.', ['`Kit` is not an area', 'the summary starts with a capital ("A")', 'it ends with a full stop']],
  ])('refuses %j', (subject, problems) => {
    expect(subjectProblems(subject, AREAS)).toEqual(problems);
  });
});

describe('checkCommitMessage', () => {
  it('passes a message that keeps the rule', () => {
    expect(checkCommitMessage('helm: one page per chart\n\nWhy it matters.\n', CONTRIBUTING)).toBeUndefined();
  });

  it("refuses in one line: what is wrong, the rule, and CONTRIBUTING's areas", () => {
    const line = checkCommitMessage('Helm: One page per chart.\n\nWhy.\n', CONTRIBUTING)!;
    expect(line.split('\n')).toHaveLength(1);
    expect(line).toContain('`Helm` is not an area; the summary starts with a capital ("One"); it ends with a full stop.');
    expect(line).toContain('`area: summary`, at most 72 characters, lower case after the colon, no full stop');
    expect(line).toContain(`areas: ${areasOf(CONTRIBUTING).join(', ')}`);
  });

  it('refuses everything while CONTRIBUTING.md names no areas, saying so', () => {
    expect(checkCommitMessage('kit: a thing\n', '# Contributing\n')).toMatch(/names no areas/);
  });
});
