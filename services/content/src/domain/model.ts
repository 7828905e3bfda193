/** Content's records as the domain sees them (timestamps as ISO-8601 UTC strings). */
export interface User {
  id: number;
  name: string;
  email: string;
  avatar: string | null;
  role: 'user' | 'admin';
  createdAt: string;
}

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
