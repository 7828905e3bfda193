import { requiredText } from './text';

/**
 * A Halo user as every service sees it. Content owns users (its schema, its `UserService`); auth
 * and any other service hold only ids and ask content. Timestamps are ISO-8601 UTC.
 */
export interface User {
  id: number;
  name: string;
  email: string;
  avatar: string | null;
  role: Role;
  createdAt: string;
}

export type Role = 'user' | 'admin';

export const MAX_USER_NAME = 100;

/** A user's name wherever one is entered (content's users, auth's registration): trimmed, 1–100 characters. */
export const userName = (raw: unknown): string => requiredText(raw, 'name', MAX_USER_NAME);
