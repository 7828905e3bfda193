import { badRequest, isEmailAddress, normaliseEmail } from '@halo/kit';

/** CONTRACT.md: `POST /greet` needs a non-empty string name. */
export function greeting(name: unknown): string {
  if (typeof name !== 'string' || name.trim() === '') throw badRequest('name is required');
  return `Halo, ${name}!`;
}

export const HELLO = 'Halo Dunia!';

/** Ids are parsed by the kit (400 `Invalid id`), the same in every service. */
export { parseId } from '@halo/kit';


export interface NewUser {
  name: string;
  email: string;
  avatar: string | null;
  role: 'user' | 'admin';
}

/** Validates and normalises a new user (trimmed name, lower-cased email). */
export function newUser(input: { name?: unknown; email?: unknown; avatar?: unknown; role?: unknown }): NewUser {
  const name = typeof input.name === 'string' ? input.name.trim() : '';
  if (!name) throw badRequest('name is required');
  if (name.length > 100) throw badRequest('name must be at most 100 characters');
  const email = typeof input.email === 'string' ? normaliseEmail(input.email) : '';
  if (!email) throw badRequest('email is required');
  if (!isEmailAddress(email)) throw badRequest('email is invalid');
  const avatar = typeof input.avatar === 'string' && input.avatar.trim() ? input.avatar.trim() : null;
  const role = input.role === 'admin' ? 'admin' : 'user';
  return { name, email, avatar, role };
}

export const DEFAULT_PAGE_SIZE = 10;
export const MAX_PAGE_SIZE = 100;

/** A keyset position in "newest first" order: (createdAt, id) of the last row seen. */
export interface Cursor {
  createdAt: string;
  id: number;
}

const CURSOR_PREFIX = 'post:';

/** Cursors are opaque to clients: base64url of a prefixed position, never a bare offset. */
export function encodeCursor(c: Cursor): string {
  return Buffer.from(`${CURSOR_PREFIX}${c.createdAt}|${c.id}`, 'utf8').toString('base64url');
}

const isCanonicalIso = (s: string) => {
  const ms = Date.parse(s);
  return !Number.isNaN(ms) && new Date(ms).toISOString() === s;
};

export function decodeCursor(raw: string): Cursor {
  const text = Buffer.from(raw, 'base64url').toString('utf8');
  const m = text.startsWith(CURSOR_PREFIX) ? /^(.+)\|(\d{1,15})$/.exec(text.slice(CURSOR_PREFIX.length)) : null;
  // Only the canonical form we issue: Date.parse accepts strings Postgres rejects ('1', '2026-02-30…').
  if (!m || !isCanonicalIso(m[1]!)) throw badRequest('Invalid cursor');
  return { createdAt: m[1]!, id: Number(m[2]) };
}

/** `posts(first, after)`: first defaults to 10, must be 0–100; `after` must be a cursor we issued. */
export function connectionArgs(args: { first?: number | null; after?: string | null }): { first: number; after: Cursor | null } {
  const first = args.first ?? DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(first) || first < 0 || first > MAX_PAGE_SIZE) {
    throw badRequest(`first must be between 0 and ${MAX_PAGE_SIZE}`);
  }
  return { first, after: args.after ? decodeCursor(args.after) : null };
}

/** Builds a connection from `first + 1` rows fetched past the cursor (the extra row means "more"). */
export function toConnection<T extends { createdAt: string; id: number }>(rows: T[], first: number) {
  const page = rows.slice(0, first);
  const edges = page.map((node) => ({ cursor: encodeCursor(node), node }));
  return {
    edges,
    pageInfo: { hasNextPage: rows.length > first, endCursor: edges.at(-1)?.cursor ?? null },
  };
}
