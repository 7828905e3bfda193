import type { Db } from '@halo/kit/db';
import type { ChatInfo, MembersRepo } from '../domain/members';

interface ChatRow {
  id: string;
  title: string | null;
  creator_id: number;
  created_at: Date;
  seq: number;
  member_ids: number[];
}

// A private chat is a chats row with a creator; its members in join order.
const SELECT = `SELECT c.id, c.title, c.creator_id, c.created_at, c.seq,
  ARRAY(SELECT m.user_id FROM chat_members m WHERE m.chat_id = c.id ORDER BY m.added_at, m.user_id) AS member_ids
  FROM chats c`;

const toChat = (r: ChatRow): ChatInfo => ({
  id: r.id,
  title: r.title,
  creatorId: Number(r.creator_id),
  createdAt: r.created_at.toISOString(),
  seq: Number(r.seq),
  memberIds: r.member_ids.map(Number),
});

/** The SQL of private chats and their members. */
export class MembersStore implements MembersRepo {
  constructor(private readonly db: Db) {}

  async createChat(chat: { id: string; title: string | null; creatorId: number; memberIds: number[] }): Promise<ChatInfo> {
    await this.db.transaction(async (tx) => {
      await tx.query('INSERT INTO chats (id, title, creator_id) VALUES ($1, $2, $3)', [chat.id, chat.title, chat.creatorId]);
      await tx.query('INSERT INTO chat_members (chat_id, user_id) SELECT $1, unnest($2::bigint[])', [chat.id, chat.memberIds]);
    });
    return (await this.chatInfo(chat.id))!;
  }

  async chatInfo(chatId: string): Promise<ChatInfo | null> {
    const { rows } = await this.db.query<ChatRow>(`${SELECT} WHERE c.id = $1 AND c.creator_id IS NOT NULL`, [chatId]);
    return rows[0] ? toChat(rows[0]) : null;
  }

  async isMember(chatId: string, userId: number): Promise<boolean> {
    const { rowCount } = await this.db.query('SELECT 1 FROM chat_members WHERE chat_id = $1 AND user_id = $2', [chatId, userId]);
    return rowCount > 0;
  }

  async addMembers(chatId: string, userIds: readonly number[]): Promise<void> {
    await this.db.query('INSERT INTO chat_members (chat_id, user_id) SELECT $1, unnest($2::bigint[]) ON CONFLICT DO NOTHING', [
      chatId,
      userIds,
    ]);
  }

  async removeMember(chatId: string, userId: number): Promise<boolean> {
    const { rowCount } = await this.db.query('DELETE FROM chat_members WHERE chat_id = $1 AND user_id = $2', [chatId, userId]);
    return rowCount > 0;
  }

  async chatsOf(userId: number, limit: number, beforeSeq: number | null): Promise<ChatInfo[]> {
    const { rows } = await this.db.query<ChatRow>(
      `${SELECT} JOIN chat_members me ON me.chat_id = c.id AND me.user_id = $1
       WHERE ($2::bigint IS NULL OR c.seq < $2) ORDER BY c.seq DESC LIMIT $3`,
      [userId, beforeSeq, limit],
    );
    return rows.map(toChat);
  }
}
