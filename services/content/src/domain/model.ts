import type { User } from '@halo/kit/domain';

/** Content owns users; their shape is the kit's, the one every service sees. */
export type { User };

/** Content's records as the domain sees them (timestamps as ISO-8601 UTC strings). */
export interface Post {
  id: number;
  userId: number;
  title: string;
  body: string;
  createdAt: string;
}

export interface Comment {
  id: number;
  postId: number;
  userId: number;
  body: string;
  createdAt: string;
}

/** The author as embedded in REST responses (spec: id, name, avatar). */
export const embeddedAuthor = (u: User) => ({ id: u.id, name: u.name, avatar: u.avatar });
