import { badRequest, idCursor, requiredText } from '@halo/kit';

/** A chat id: trimmed, 1–64 characters (docs/api/graphql.md "Chat"). */
export const MAX_CHAT_ID = 64;
/** A message's text: trimmed, 1–2000 characters. */
export const MAX_TEXT = 2000;
/** `messages(first)` when not given; the kit caps it at 100. */
export const DEFAULT_PAGE = 20;

export const DELIVERY_UNAVAILABLE = 'Message delivery unavailable';

/**
 * A required text field as chat takes it: the kit's rule (trimmed, `<field> is required`,
 * `<field> must be at most <max> characters`), and no NUL character, which PostgreSQL cannot
 * store in text (it would be a 500, not the client's 400).
 */
function chatText(raw: unknown, field: string, max: number): string {
  const text = requiredText(raw, field, max);
  if (text.includes('\u0000')) throw badRequest(`${field} must not contain NUL characters`);
  return text;
}

export const chatIdOf = (raw: unknown) => chatText(raw, 'chatId', MAX_CHAT_ID);
export const messageText = (raw: unknown) => chatText(raw, 'text', MAX_TEXT);

/** `messages` pages newest first by id (ids of one chat grow in send order): the position is the last id seen. */
export const MESSAGE_CURSOR = idCursor('message:');
