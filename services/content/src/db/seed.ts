import type { Db } from '@halo/kit/db';
import type { Logger } from '@halo/kit/logging';
import { newUser } from '../domain/rules';
import { ContentStore } from './store';

/**
 * Demo data for the embedded dev mode only (docs/api/auth.md "Seeded demo data"). Idempotent: users
 * are keyed by email, and a demo user's posts (with their comments) are written only while that
 * user has none, so a restart neither duplicates nor loses rows. Passwords are auth's business.
 */
const DEMO = [
  {
    user: { name: 'Admin', email: 'admin@halo.local', role: 'admin' },
    posts: [{ title: 'Welcome to Halo', body: 'One gateway, five services, one contract.', comments: ['Glad to be here!'] }],
  },
  {
    user: { name: 'Alice', email: 'alice@halo.local', role: 'user' },
    posts: [
      { title: 'Hello from Alice', body: 'My first post on Halo.', comments: ['Welcome, Alice!', 'Nice to see you here.'] },
      { title: 'Federation notes', body: 'Entities are joined by the gateway, not by SQL.', comments: ['Very clear, thanks.'] },
    ],
  },
  {
    user: { name: 'Bob', email: 'bob@halo.local', role: 'user' },
    posts: [
      { title: "Bob's first post", body: 'Testing the waters.', comments: ['Hi Bob!'] },
      { title: 'Pagination is hard', body: 'Cursors beat offsets for feeds.', comments: ['Agreed.', 'Keyset all the way.'] },
    ],
  },
];

export async function seedDemoData(db: Db, logger: Logger): Promise<void> {
  const store = new ContentStore(db);
  const created = await db.transaction(async (tx) => {
    const base = Date.parse('2026-01-01T09:00:00.000Z');
    let minute = 0;
    const at = () => new Date(base + minute++ * 60_000).toISOString();
    // Users first (so anyone can comment anywhere); posts only for users created in this run.
    const fresh: { id: number; posts: (typeof DEMO)[number]['posts'] }[] = [];
    const everyone: number[] = [];
    for (const { user, posts } of DEMO) {
      const input = newUser(user);
      const u = (await store.insertUser(input, tx)) ?? (await store.userByEmail(input.email, tx));
      if (!u) continue;
      everyone.push(u.id);
      if (!(await store.hasPosts(tx, u.id))) fresh.push({ id: u.id, posts });
    }
    for (const [n, { id, posts }] of fresh.entries()) {
      for (const p of posts) {
        const post = await store.insertPost(tx, { userId: id, title: p.title, body: p.body, createdAt: at() });
        for (const [i, body] of p.comments.entries()) {
          const author = everyone[(n + i + 1) % everyone.length]!;
          await store.insertComment(tx, { postId: post.id, userId: author, body, createdAt: at() });
        }
      }
    }
    return fresh.length;
  });
  logger.info({ seededUsers: created }, created ? 'demo data seeded' : 'demo data already present');
}
