import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startE2ESystem } from './helpers';

/**
 * The front door: with no DATABASE_URL the system runs on embedded PGlite, seeds the demo data,
 * and a restart on the same data directory neither duplicates nor loses rows.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'halo-e2e-embedded-'));

afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

async function snapshot(url: string) {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ users { email role posts { id comments { id } } } }' }),
  });
  return ((await res.json()) as { data: { users: { email: string; role: string; posts: { comments: unknown[] }[] }[] } }).data
    .users;
}

it('boots on PGlite with the demo data, and a restart keeps it without duplicates', async () => {
  const first = await startE2ESystem({ portOffset: 400, postgres: false, dataDir });
  let before;
  try {
    expect(await (await fetch(`${first.url}/hello`)).json()).toEqual({ message: 'Halo Dunia!' });
    before = await snapshot(first.url);
    expect(before.map((u) => u.email)).toEqual(expect.arrayContaining(['admin@halo.local', 'alice@halo.local', 'bob@halo.local']));
    expect(before.find((u) => u.email === 'admin@halo.local')?.role).toBe('admin');
    for (const u of before) expect(u.posts.length).toBeGreaterThan(0);
    expect(before.flatMap((u) => u.posts).some((p) => p.comments.length > 0)).toBe(true);
  } finally {
    await first.stop();
  }
  const second = await startE2ESystem({ portOffset: 400, postgres: false, dataDir });
  try {
    expect(await snapshot(second.url)).toEqual(before);
  } finally {
    await second.stop();
  }
}, 120_000);
