import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parse, type Program } from 'acorn';

/**
 * The k6 scripts say they run on k6 v0.48 and later. That k6 compiles ES2017 at most (no object
 * spread, `??` or `?.`), and a script that imports from a URL fails offline: every script must
 * parse as an ES2017 module and import only k6's own modules and local files.
 */
const K6_DIR = resolve(__dirname, '../k6');

function scripts(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? scripts(join(dir, e.name)) : e.name.endsWith('.js') ? [join(dir, e.name)] : [],
  );
}

/** Why k6 v0.48 would refuse `source` (or need the network to run it); none when it would not. */
function problems(source: string): string[] {
  let program: Program;
  try {
    program = parse(source, { ecmaVersion: 2017, sourceType: 'module' });
  } catch (err) {
    return [`not ES2017: ${(err as Error).message}`];
  }
  const found: string[] = [];
  for (const node of program.body) {
    const from =
      node.type === 'ImportDeclaration' || node.type === 'ExportAllDeclaration' || node.type === 'ExportNamedDeclaration'
        ? node.source?.value
        : undefined;
    if (typeof from === 'string' && /^https?:\/\//i.test(from)) found.push(`remote import ${from}`);
  }
  return found;
}

describe('k6 scripts (loadtest/k6)', () => {
  const files = scripts(K6_DIR);

  it('finds the suites and their shared helpers', () => {
    const names = files.map((f) => relative(K6_DIR, f)).sort();
    expect(names).toEqual(expect.arrayContaining(['auth.js', 'chat.js', 'graphql.js', 'lib/common.js', 'lib/uuid.js', 'orders.js']));
  });

  it.each(files.map((f) => [relative(K6_DIR, f), f]))('%s is an ES2017 module with no remote import', (_name, file) => {
    expect(problems(readFileSync(file, 'utf8'))).toEqual([]);
  });
});

describe('the ES2017 check', () => {
  it('accepts what k6 v0.48 runs', () => {
    const ok = `import http from 'k6/http';
import { uuidv4 } from './lib/uuid.js';
export const options = { thresholds: Object.assign({}, { checks: ['rate>0.99'] }) };
export default async function () { const { status } = http.get(\`\${__ENV.BASE_URL}/\${uuidv4()}\`); return [...[status]]; }`;
    expect(problems(ok)).toEqual([]);
  });

  it.each([
    ['object spread', 'const a = { b: 1 };\nexport const c = { ...a, d: 2 };'],
    ['nullish coalescing', 'export const rate = Number(__ENV.RATE ?? 50);'],
    ['optional chaining', 'export const text = (m) => m.payload?.data;'],
    ['object rest', 'export const pick = ({ a, ...rest }) => rest;'],
  ])('refuses %s', (_what, source) => {
    expect(problems(source)).toEqual([expect.stringMatching(/^not ES2017: /)]);
  });

  it('refuses an import from a URL, and a re-export from one', () => {
    expect(problems("import { uuidv4 } from 'https://jslib.k6.io/k6-utils/1.4.0/index.js';")).toEqual([
      'remote import https://jslib.k6.io/k6-utils/1.4.0/index.js',
    ]);
    expect(problems("export * from 'http://example.com/lib.js';")).toEqual(['remote import http://example.com/lib.js']);
  });
});

// k6/crypto exists only inside k6; here its randomBytes is Node's (both return fresh random bytes).
jest.mock('k6/crypto', () => ({ __esModule: true, default: { randomBytes: (n: number) => Uint8Array.from(randomBytes(n)).buffer } }), {
  virtual: true,
});

describe('lib/uuid.js', () => {
  const { uuidv4 } = jest.requireActual<{ uuidv4(): string }>('../k6/lib/uuid.js');

  it('makes RFC 4122 version 4 UUIDs, a different one each call', () => {
    const ids = Array.from({ length: 200 }, () => uuidv4());
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
