import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

/**
 * Two test runs share a machine only if no suite binds a port of its own choosing: every e2e system
 * takes the OS's ports (startE2ESystem, `ports: 'auto'`), and the few tests of what
 * HALO_PORT_OFFSET names (`npm start`, `npm run restart`) take an offset from `freeOffset()`. A
 * fixed offset or a loopback address with a written port brings back the collisions between runs.
 */
const E2E = resolve(__dirname, '../../e2e');
const FIXED = [
  /portOffset: \d+/g,
  /PORT_OFFSET = \d+/g,
  /HALO_PORT_OFFSET: '\d+'/g,
  /npmStart\(\d+/g,
  // The machine's PostgreSQL and Redis are the run's, not the suite's.
  /(?:127\.0\.0\.1|localhost):(?!5432\b|6379\b)\d{2,5}\b/g,
];
/** The README's example address, which the client-readme suite replaces with the system's. */
const README_EXAMPLE = 'http://127.0.0.1:4000';

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

it('no e2e suite chooses a port or an offset of its own', () => {
  const found: string[] = [];
  const all = files(E2E);
  expect(all.length).toBeGreaterThan(40);
  for (const file of all) {
    const text = readFileSync(file, 'utf8').replaceAll(README_EXAMPLE, '');
    for (const pattern of FIXED) for (const m of text.matchAll(pattern)) found.push(`${relative(E2E, file)}: ${m[0]}`);
  }
  expect(found).toEqual([]);
});
