import { idCursor, parseId, requiredText } from '@halo/kit/domain';
import { badRequest, replayTooLong } from '@halo/kit/errors';

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
export function chatText(raw: unknown, field: string, max: number): string {
  const text = requiredText(raw, field, max);
  if (text.includes('\u0000')) throw badRequest(`${field} must not contain NUL characters`);
  return text;
}

export const chatIdOf = (raw: unknown) => chatText(raw, 'chatId', MAX_CHAT_ID);
export const messageText = (raw: unknown) => chatText(raw, 'text', MAX_TEXT);

/** `messages` pages newest first by id (ids of one chat grow in send order): the position is the last id seen. */
export const MESSAGE_CURSOR = idCursor('message:');

/**
 * The most messages `newMessage(chatId, after)` replays before going live (docs/api/graphql.md
 * "Resuming"). Further behind, the subscription is refused with REPLAY_TOO_LONG: the client reads
 * the gap with `messages` and resumes from its newest message.
 */
export const MAX_REPLAY = 1_000;

export const NOT_IN_CHAT = 'after is not a message of this chat';

export const tooLong = () =>
  replayTooLong(`More than ${MAX_REPLAY} messages after this one: read them with messages, then resume after the newest`, {
    maxReplay: MAX_REPLAY,
  });

/** `after` of newMessage: absent or null → a plain live subscription; otherwise a message id (400 `Invalid id`). */
export const afterOf = (raw: unknown): number | null => (raw === undefined || raw === null ? null : parseId(raw, { min: 1 }));
