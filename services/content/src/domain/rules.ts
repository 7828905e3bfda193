import { holdsScope, type Caller } from '@halo/kit/auth';
import { emailAddress, timeIdCursor, userName, type Role } from '@halo/kit/domain';
import { badRequest } from '@halo/kit/errors';

/** docs/api/resources.md: `POST /greet` needs a non-empty string name. */
export function greeting(name: unknown): string {
  if (typeof name !== 'string' || name.trim() === '') throw badRequest('name is required');
  return `Halo, ${name}!`;
}

export const HELLO = 'Halo Dunia!';

export interface NewUser {
  name: string;
  email: string;
  avatar: string | null;
  role: Role;
}

/** Validates and normalises a new user with the kit's user rules (trimmed name, lower-cased email). */
export function newUser(input: { name?: unknown; email?: unknown; avatar?: unknown; role?: unknown }): NewUser {
  const name = userName(input.name);
  const email = emailAddress(input.email);
  const avatar = typeof input.avatar === 'string' && input.avatar.trim() ? input.avatar.trim() : null;
  const role = input.role === 'admin' ? 'admin' : 'user';
  return { name, email, avatar, role };
}

/** `posts(first, after)` pages newest first: a position is (createdAt, id) of the last post seen. */
export const POST_CURSOR = timeIdCursor('post:');
export type PostPosition = { createdAt: string; id: number };

/**
 * `User.email` as `caller` may read it (docs/api/graphql.md): the user themself and admins see the
 * address; everyone else, anonymous callers included, an empty string. The field stays non-null,
 * as public APIs with a non-null email do (the address of someone who is not you reads as "").
 * Services calling over gRPC (auth signing someone in) are not callers and get the user whole.
 * An API key is its owner within its scopes: its owner's address needs `profile:read` (as
 * `me { email }` does), anyone else's (an admin's key) `users:email:read`; without, "" as for a stranger.
 */
export function visibleEmail(caller: Caller | null, user: { id: number; email: string }): string {
  if (caller === null) return '';
  if (caller.id === user.id) return holdsScope(caller, 'profile:read') ? user.email : '';
  return caller.role === 'admin' && holdsScope(caller, 'users:email:read') ? user.email : '';
}
