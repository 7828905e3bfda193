import { readFile } from 'node:fs/promises';
import { tokenizer, type Token } from 'acorn';
import type { Plugin } from 'esbuild';

/**
 * Why a bundle must be one byte per character (ADR 0018): V8 keeps each script's source on the
 * heap for as long as the process lives (lazy compilation and `Function.prototype.toString` read
 * it), one byte per character when every character is Latin-1, two bytes otherwise. ONE character
 * over U+00FF anywhere in a 10 MB bundle makes the whole source two-byte: 10 MB more resident in
 * every process. esbuild writes strings, identifiers and templates as ASCII already
 * (`charset: 'ascii'`) and drops comments when minifying whitespace; it leaves regular-expression
 * literals as written, so a library's `/^[А-Я]+$/i` (validator's locales) is what is left.
 *
 * `escapeRegExpLiterals` rewrites, in one file's source, every character over U+007F inside a
 * regular-expression literal as `\uXXXX` (one escape per UTF-16 code unit). That is the same
 * pattern: `\uXXXX` is the character itself as an atom, in a class and as a range end; in `u` and
 * `v` mode a lead and trail surrogate escape pair is one code point, as the pair written out was;
 * a non-ASCII identity escape (`\ж`, allowed only without `u`/`v`) is the character itself too.
 * Everything outside regular expressions is left to esbuild.
 */
export function escapeRegExpLiterals(source: string): { code: string; escaped: number } {
  const edits: { start: number; end: number; text: string }[] = [];
  const tokens = tokenizer(source, { ecmaVersion: 'latest', sourceType: 'script', allowHashBang: true, allowReturnOutsideFunction: true });
  for (const token of tokens as Iterable<Token>) {
    if (token.type.label !== 'regexp') continue;
    const literal = source.slice(token.start, token.end);
    if (!/[^\x00-\x7f]/.test(literal)) continue;
    edits.push({ start: token.start, end: token.end, text: escapePattern(literal) });
  }
  if (edits.length === 0) return { code: source, escaped: 0 };
  let code = '';
  let at = 0;
  for (const edit of edits) {
    code += source.slice(at, edit.start) + edit.text;
    at = edit.end;
  }
  return { code: code + source.slice(at), escaped: edits.length };
}

const hex4 = (unit: number) => `\\u${unit.toString(16).padStart(4, '0')}`;

/** One regular-expression literal (`/…/flags`), every non-ASCII code unit as `\uXXXX`. */
function escapePattern(literal: string): string {
  let out = '';
  for (let i = 0; i < literal.length; i++) {
    const unit = literal.charCodeAt(i);
    if (literal[i] === '\\' && i + 1 < literal.length && literal.charCodeAt(i + 1) > 0x7f) {
      // An identity escape of a non-ASCII character (only legal without u/v): the character itself.
      out += hex4(literal.charCodeAt(i + 1));
      i++;
    } else if (literal[i] === '\\') {
      out += literal.slice(i, i + 2); // any other escape, kept whole (so `\\` never pairs wrongly)
      i++;
    } else {
      out += unit > 0x7f ? hex4(unit) : literal[i];
    }
  }
  return out;
}

/**
 * esbuild plugin: JavaScript files with a non-ASCII character anywhere are loaded through
 * `escapeRegExpLiterals`; every other file loads as esbuild would (the check is one scan).
 */
export function oneByteRegExps(): Plugin {
  return {
    name: 'one-byte-regexps',
    setup(build) {
      build.onLoad({ filter: /\.[cm]?js$/ }, async (args) => {
        const source = await readFile(args.path, 'utf8');
        if (!/[^\x00-\x7f]/.test(source)) return undefined;
        let result: { code: string; escaped: number };
        try {
          result = escapeRegExpLiterals(source);
        } catch {
          return undefined; // not tokenisable as a script (esbuild will say why, or it parses as a module)
        }
        return result.escaped === 0 ? undefined : { contents: result.code, loader: 'js' };
      });
    },
  };
}

/** Where a bundle still holds characters over U+00FF (which make V8 keep it two-byte): the first few, with context. */
export function twoByteCharacters(code: string, limit = 3): string[] {
  const found: string[] = [];
  for (let i = 0; i < code.length && found.length < limit; i++) {
    if (code.charCodeAt(i) > 0xff) found.push(JSON.stringify(code.slice(Math.max(0, i - 40), i + 10)));
  }
  return found;
}
