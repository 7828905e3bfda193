import type { Db } from '@halo/kit/db';
import type { ChatRepo } from '../domain/chat';
import type { Message, NewMessage } from '../domain/model';

interface MessageRow {
  id: number;
  chat_id: string;
  author_id: number;
  text: string;
  created_at: Date;
}

const COLS = 'id, chat_id, author_id, text, created_at';

const toMessage = (r: MessageRow): Message => ({
  id: r.id,
  chatId: r.chat_id,
  authorId: r.author_id,
  text: r.text,
  createdAt: r.created_at.toISOString(),
});

/** Every SQL statement of the chat service. */
export class ChatStore implements ChatRepo {
  constructor(private readonly db: Db) {}

  appendMessage(m: NewMessage, publish: (message: Message) => Promise<void>): Promise<Message> {
    return this.db.transaction(async (tx) => {
      const { rowCount } = await tx.query('SELECT 1 FROM chats WHERE id = $1 FOR UPDATE', [m.chatId]);
      // A new chat: created by its first message. DO UPDATE (not NOTHING) so that the row is locked
      // here too when a concurrent first message created it a moment ago (we wait for its commit).
      if (rowCount === 0) await tx.query('INSERT INTO chats (id) VALUES ($1) ON CONFLICT (id) DO UPDATE SET id = EXCLUDED.id', [m.chatId]);
      // The id is drawn under the chat's lock, so within a chat id order is send order.
      const { rows } = await tx.query<MessageRow>(`INSERT INTO messages (chat_id, author_id, text) VALUES ($1, $2, $3) RETURNING ${COLS}`, [
        m.chatId,
        m.authorId,
        m.text,
      ]);
      const message = toMessage(rows[0]!);
      // Still holding the lock: the next send to this chat publishes after this one, on any replica.
      await publish(message);
      return message;
    });
  }

  async messagesPage(chatId: string, limit: number, beforeId: number | null): Promise<Message[]> {
    const { rows } =
      beforeId === null
        ? await this.db.query<MessageRow>(`SELECT ${COLS} FROM messages WHERE chat_id = $1 ORDER BY id DESC LIMIT $2`, [chatId, limit])
        : await this.db.query<MessageRow>(`SELECT ${COLS} FROM messages WHERE chat_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3`, [
            chatId,
            beforeId,
            limit,
          ]);
    return rows.map(toMessage);
  }

  async messagesByIds(ids: readonly number[]): Promise<Message[]> {
    const { rows } = await this.db.query<MessageRow>(`SELECT ${COLS} FROM messages WHERE id = ANY($1::bigint[])`, [ids]);
    return rows.map(toMessage);
  }

  messagesAfter(chatId: string, afterId: number, limit: number): Promise<Message[] | null> {
    return this.db.transaction(async (tx) => {
      const known = await tx.query('SELECT 1 FROM messages WHERE id = $1 AND chat_id = $2', [afterId, chatId]);
      if (known.rowCount === 0) return null;
      // A send holds the chat's row FOR UPDATE from before its publish until its commit: waiting for
      // a share lock here means every message published so far is committed, so it is read below.
      await tx.query('SELECT 1 FROM chats WHERE id = $1 FOR SHARE', [chatId]);
      const { rows } = await tx.query<MessageRow>(`SELECT ${COLS} FROM messages WHERE chat_id = $1 AND id > $2 ORDER BY id LIMIT $3`, [
        chatId,
        afterId,
        limit,
      ]);
      return rows.map(toMessage);
    });
  }
}
