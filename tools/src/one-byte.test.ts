import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { escapeRegExpLiterals, oneByteRegExps, twoByteCharacters } from './one-byte';

const evaluate = (code: string): unknown => runInNewContext(code);
const isOneByte = (code: string) => twoByteCharacters(code).length === 0;

/** Characters that matter: ASCII, Latin-1, Cyrillic and Turkish case pairs, an astral one (a surrogate pair). */
const CHARS = ['a', 'Z', '-', 'é', 'É', 'ß', 'ж', 'Ж', 'я', 'ı', 'İ', 'i', 'K', 'K', 'Ω', 'ω', '😀', '😃', '中'];

describe('escapeRegExpLiterals', () => {
  it('writes every regular-expression literal in ASCII and leaves the rest of the source alone', () => {
    const source = 'const s = "я"; // ж\nconst re = /^[А-Я]+$/i, t = `ж${1}`; module.exports = [s, re, t, 4 / 2 / 1];';
    const { code, escaped } = escapeRegExpLiterals(source);
    expect(escaped).toBe(1);
    expect(code).toBe(source.replace('/^[А-Я]+$/i', '/^[\\u0410-\\u042f]+$/i'));
    const [s, re, t, n] = evaluate(`var module = {}; ${code}; module.exports`) as [string, RegExp, string, number];
    expect([s, t, n]).toEqual(['я', 'ж1', 2]);
    expect(re.test('ПРИВЕТ')).toBe(true);
    expect(re.test('privet')).toBe(false);
  });

  it('keeps a non-ASCII identity escape and an escaped backslash meaning what they meant', () => {
    const { code } = escapeRegExpLiterals('[/\\ж+/, /\\\\ж/]');
    expect(code).toBe('[/\\u0436+/, /\\\\\\u0436/]');
    const [identity, backslash] = evaluate(code) as [RegExp, RegExp];
    expect(identity.test('жж')).toBe(true);
    expect(backslash.test('\\ж')).toBe(true);
    expect(backslash.test('ж')).toBe(false);
  });

  it('matches exactly what the original matched, for any pattern, flags and input', () => {
    const char = fc.constantFrom(...CHARS);
    const atom = fc.oneof(
      char,
      fc.tuple(char, char).map(([a, b]) => (a.codePointAt(0)! <= b.codePointAt(0)! ? `[${a}-${b}]` : `[^${b}${a}]`)),
      char.map((c) => `${c}+`),
      char.map((c) => `(?:${c}|.)`),
    );
    const pattern = fc.array(atom, { minLength: 1, maxLength: 4 }).map((atoms) => atoms.join(''));
    const flags = fc.constantFrom('', 'i', 'u', 'iu', 'g', 'v', 'iv');
    const input = fc.array(char, { maxLength: 8 }).map((chars) => chars.join(''));
    fc.assert(
      fc.property(pattern, flags, fc.array(input, { minLength: 1, maxLength: 5 }), (p, f, inputs) => {
        let original: RegExp;
        try {
          original = evaluate(`/${p}/${f}`) as RegExp;
        } catch {
          return true; // not a valid literal in this mode (a range over an astral character without u)
        }
        const { code } = escapeRegExpLiterals(`/${p}/${f}`);
        expect(/[^\x00-\x7f]/.test(code)).toBe(false);
        const escaped = evaluate(code) as RegExp;
        for (const s of inputs) expect(String(s.match(escaped))).toBe(String(s.match(original)));
        return true;
      }),
      { numRuns: 500 },
    );
  });
});

describe('oneByteRegExps (esbuild)', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'halo-one-byte-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('bundles a dependency with non-ASCII regular expressions into a one-byte file that behaves the same', async () => {
    const { build } = await import('esbuild');
    // validator's locale table, as written in its lib/alpha.js, plus a comment and strings.
    writeFileSync(
      join(dir, 'alpha.js'),
      "// Ελληνικά\nexports.alpha = { 'bg-BG': /^[А-Я]+$/i, 'el-GR': /^[Α-ώ]+$/i, 'tr-TR': /^[A-ZÇĞİıÖŞÜ]+$/i };\nexports.word = 'Привет';\n",
    );
    writeFileSync(join(dir, 'main.js'), "const { alpha, word } = require('./alpha');\nmodule.exports = { alpha, word };\n");
    const options = { entryPoints: [join(dir, 'main.js')], bundle: true, write: false, platform: 'node' as const, format: 'cjs' as const };
    const textOf = (result: { outputFiles?: { text: string }[] }) => result.outputFiles?.[0]?.text ?? '';
    const plain = textOf(await build(options));
    const made = textOf(await build({ ...options, minifyWhitespace: true, charset: 'ascii', plugins: [oneByteRegExps()] }));
    expect(isOneByte(plain)).toBe(false); // what esbuild alone leaves: the regular expressions
    expect(isOneByte(made)).toBe(true);
    const run = (code: string) => evaluate(`var module = { exports: {} }, exports = module.exports; ${code}; module.exports`);
    const before = run(plain) as { alpha: Record<string, RegExp>; word: string };
    const after = run(made) as typeof before;
    expect(after.word).toBe('Привет');
    for (const [locale, sample] of [
      ['bg-BG', 'ПРИВЕТ'],
      ['el-GR', 'ΚΑΛΗΜΈΡΑ'],
      ['tr-TR', 'İSTANBUL'],
      ['tr-TR', 'Çığ'],
    ] as const) {
      expect(after.alpha[locale]!.test(sample)).toBe(before.alpha[locale]!.test(sample));
      expect(after.alpha[locale]!.test(sample)).toBe(true);
    }
    expect(after.alpha['bg-BG']!.test('hello')).toBe(false);
  });
});
