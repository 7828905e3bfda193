import type { Caller } from '@halo/kit/auth';
import { Members, MAX_MEMBERS, type ChatInfo, type MembersRepo } from '../src/domain/members';
import { MemberStream, type MemberRemoved } from '../src/domain/resume';
import { Inbox } from '../src/domain/inbox';

/** Membership rules without I/O (the SQL and content's gRPC are exercised in e2e/chat-private). */
const as = (id: number): Caller => ({ id, name: `u${id}`, role: 'user', scopes: null, apiKeyId: null });

class FakeMembers implements MembersRepo {
  chats = new Map<string, ChatInfo>();
  async createChat(c: { id: string; title: string | null; creatorId: number; memberIds: number[] }) {
    const info = { ...c, createdAt: new Date(0).toISOString(), seq: this.chats.size + 1 };
    this.chats.set(c.id, info);
    return info;
  }
  async chatInfo(chatId: string) {
    return this.chats.get(chatId) ?? null;
  }
  async isMember(chatId: string, userId: number) {
    return this.chats.get(chatId)?.memberIds.includes(userId) ?? false;
  }
  async addMembers(chatId: string, ids: readonly number[]) {
    const c = this.chats.get(chatId)!;
    c.memberIds = [...new Set([...c.memberIds, ...ids])];
  }
  async removeMember(chatId: string, userId: number) {
    const c = this.chats.get(chatId)!;
    const had = c.memberIds.includes(userId);
    c.memberIds = c.memberIds.filter((id) => id !== userId);
    return had;
  }
  async chatsOf(userId: number, limit: number, beforeSeq: number | null) {
    return [...this.chats.values()]
      .filter((c) => c.memberIds.includes(userId) && (beforeSeq === null || c.seq < beforeSeq))
      .reverse()
      .slice(0, limit);
  }
}

/** Users 1–500 exist. */
const users = { existing: async (ids: readonly number[]) => ids.filter((id) => id <= 500) };

describe('Members', () => {
  it('creates with a `~` id, the creator first, duplicates and the creator dropped from memberIds', async () => {
    const m = new Members(new FakeMembers(), users);
    const chat = await m.create(as(7), { title: ' t ', memberIds: ['8', '8', '7'] });
    expect(chat).toMatchObject({ title: 't', creatorId: 7, memberIds: [7, 8] });
    expect(chat.id).toMatch(/^~[\w-]{22}$/);
  });

  it('refuses: anonymous 401, unknown users and too many members 400, an empty title 400', async () => {
    const m = new Members(new FakeMembers(), users);
    await expect(m.create(null, { title: null, memberIds: [] })).rejects.toMatchObject({ kind: 'UNAUTHENTICATED' });
    await expect(m.create(as(1), { title: null, memberIds: ['600', '2'] })).rejects.toMatchObject({
      kind: 'BAD_REQUEST',
      message: 'memberIds: no such user: 600',
    });
    const many = Array.from({ length: MAX_MEMBERS + 1 }, (_, i) => String(i + 2));
    await expect(m.create(as(1), { title: null, memberIds: many })).rejects.toMatchObject({ kind: 'BAD_REQUEST' });
    await expect(m.create(as(1), { title: '  ', memberIds: [] })).rejects.toMatchObject({ message: 'title is required' });
    await expect(m.create(as(1), { title: null, memberIds: 'x' })).rejects.toMatchObject({ message: 'memberIds is required' });
  });

  it('a NUL in a title or a chat id is the client’s 400, as everywhere in chat (PostgreSQL text cannot hold it)', async () => {
    const m = new Members(new FakeMembers(), users);
    await expect(m.create(as(1), { title: 'a\u0000b', memberIds: [] })).rejects.toMatchObject({
      kind: 'BAD_REQUEST',
      message: 'title must not contain NUL characters',
    });
    await expect(m.add(as(1), { chatId: '~a\u0000b', memberIds: ['2'] })).rejects.toMatchObject({
      kind: 'BAD_REQUEST',
      message: 'chatId must not contain NUL characters',
    });
    await expect(m.remove(as(1), { chatId: 'x'.repeat(65), userId: '2' })).rejects.toMatchObject({ kind: 'BAD_REQUEST' });
  });

  it('adds (creator only) and removes (creator, or oneself; never the creator)', async () => {
    const m = new Members(new FakeMembers(), users);
    const { id } = await m.create(as(1), { title: null, memberIds: ['2'] });
    await expect(m.add(as(2), { chatId: id, memberIds: ['3'] })).rejects.toMatchObject({ kind: 'FORBIDDEN' });
    await expect(m.add(as(3), { chatId: id, memberIds: ['3'] })).rejects.toMatchObject({ kind: 'FORBIDDEN' });
    expect((await m.add(as(1), { chatId: id, memberIds: ['3'] })).memberIds).toEqual([1, 2, 3]);
    await expect(m.remove(as(2), { chatId: id, userId: '3' })).rejects.toMatchObject({ kind: 'FORBIDDEN' });
    await expect(m.remove(as(1), { chatId: id, userId: '1' })).rejects.toMatchObject({ kind: 'BAD_REQUEST' });
    expect((await m.remove(as(3), { chatId: id, userId: '3' })).removed).toBe(3);
    expect((await m.remove(as(1), { chatId: id, userId: '2' })).chat.memberIds).toEqual([1]);
    await expect(m.requireAccess(id, 2)).rejects.toMatchObject({ kind: 'FORBIDDEN' });
    await expect(m.requireAccess('free-form', 2)).resolves.toBeUndefined();
  });
});

describe('MemberStream', () => {
  it("passes messages, skips others' removals, and ends with the error on its member's removal", async () => {
    const inbox = new Inbox<{ id: number } | MemberRemoved>(
      () => undefined,
      10,
      () => new Error('overflow'),
    );
    const stream = new MemberStream<{ id: number }>(inbox, 5, () => new Error('removed'));
    inbox.push({ id: 1 });
    inbox.push({ kind: 'removed', chatId: '~c', userId: 6 });
    inbox.push({ id: 2 });
    inbox.push({ kind: 'removed', chatId: '~c', userId: 5 });
    inbox.push({ id: 3 });
    expect(await stream.next()).toEqual({ value: { id: 1 }, done: false });
    expect(await stream.next()).toEqual({ value: { id: 2 }, done: false });
    await expect(stream.next()).rejects.toThrow('removed');
    expect(await stream.next()).toEqual({ value: undefined, done: true });
  });
});
