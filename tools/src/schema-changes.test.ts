import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { composeSupergraph, SUPERGRAPH_FILE } from './compose';
import { acknowledge, breakingChanges, readAcknowledged, unacknowledged } from './schema-changes';

/**
 * Independent releases (README "GraphQL at the edge"): a service's schema change is recomposed
 * with everyone else's and compared with the committed supergraph; what breaks clients is caught
 * unless acknowledged, and what cannot compose is caught too.
 */

const committed = readFileSync(SUPERGRAPH_FILE, 'utf8');
const contentSchema = readFileSync(resolve(__dirname, '../../services/content/schema.graphql'), 'utf8');

function composeWithContent(sdl: string): string {
  const result = composeSupergraph({ content: sdl });
  if ('errors' in result) throw new Error(result.errors.join('\n'));
  return result.sdl;
}

it('the services’ schemas compose to the committed supergraph, with no breaking change', async () => {
  const fresh = composeSupergraph();
  if ('errors' in fresh) throw new Error(fresh.errors.join('\n'));
  expect(fresh.sdl).toBe(committed);
  expect(await breakingChanges(committed, fresh.sdl)).toEqual([]);
});

it('adding a field is not breaking', async () => {
  const next = composeWithContent(contentSchema.replace('  avatar: String\n', '  avatar: String\n  nickname: String\n'));
  expect(next).toContain('nickname: String');
  expect(await breakingChanges(committed, next)).toEqual([]);
});

it('removing a field, or making an argument required, is caught', async () => {
  const removed = composeWithContent(contentSchema.replace('  avatar: String\n', ''));
  expect((await breakingChanges(committed, removed)).map((c) => [c.type, c.path])).toEqual([['FIELD_REMOVED', 'User.avatar']]);
  const required = composeWithContent(contentSchema.replace('posts(first: Int, after: String)', 'posts(first: Int!, after: String)'));
  const changes = await breakingChanges(committed, required);
  expect(changes.map((c) => c.path)).toEqual(['Query.posts.first']);
});

it('an acknowledged break passes; a new one still does not', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'halo-ack-'));
  try {
    const file = join(dir, 'breaking-changes.json');
    const removed = await breakingChanges(committed, composeWithContent(contentSchema.replace('  avatar: String\n', '')));
    expect(unacknowledged(removed, readAcknowledged(file))).toHaveLength(1);
    acknowledge(removed, 'avatars move to the media service; clients told in #api', file, new Date('2026-01-02T03:04:05Z'));
    expect(readAcknowledged(file)).toEqual([
      {
        type: 'FIELD_REMOVED',
        path: 'User.avatar',
        message: expect.stringContaining('avatar'),
        reason: 'avatars move to the media service; clients told in #api',
        acknowledgedAt: '2026-01-02T03:04:05.000Z',
      },
    ]);
    expect(unacknowledged(removed, readAcknowledged(file))).toEqual([]);
    const more = await breakingChanges(
      committed,
      composeWithContent(contentSchema.replace('  avatar: String\n', '').replace('  role: String!\n', '')),
    );
    expect(unacknowledged(more, readAcknowledged(file)).map((c) => c.path)).toEqual(['User.role']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

it('a schema that does not compose with the others is reported, not written', () => {
  // A second subgraph defining Query.user with another type cannot compose with content's.
  const clash = composeSupergraph({
    catalog: `${readFileSync(resolve(__dirname, '../../services/catalog/schema.graphql'), 'utf8')}\nextend type Query { user(id: ID!): Int }`,
  });
  expect('errors' in clash && clash.errors.join('\n')).toMatch(/user/);
  const unparsable = composeSupergraph({ content: 'type Query {' });
  expect('errors' in unparsable).toBe(true);
});
