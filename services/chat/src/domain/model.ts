/** A message as every transport sees it, and as it travels to subscribers (plain JSON). */
export interface Message {
  id: number;
  chatId: string;
  /** The sender: a content user's id (from the caller's token). */
  authorId: number;
  text: string;
  /** ISO-8601 UTC, millisecond precision. */
  createdAt: string;
}

/** What `sendMessage` stores, after validation. */
export interface NewMessage {
  chatId: string;
  authorId: number;
  text: string;
}
