import { randomBytes } from 'node:crypto';
import { requireCaller, type Caller } from '@halo/kit/auth';
import { idCursor, keysetConnection, parseId, type ConnectionArgs, type CursorCodec } from '@halo/kit/domain';
import { badRequest, forbidden } from '@halo/kit/errors';
import { chatIdOf, chatText } from './rules';

/**
 * Private chats (docs/api/graphql.md "Private chats"): `createChat` gives them an id in the `~`
 * namespace, which free-form ids cannot take (a `~` id that is not a private chat is refused, never
 * created by a first message). Only members read and write them; every other chat id stays open
 * to every signed-in user, as before.
 */
export const PRIVATE_PREFIX = '~';
export const isPrivateChatId = (chatId: string) => chatId.startsWith(PRIVATE_PREFIX);
export const MAX_MEMBERS = 100;
export const MAX_TITLE = 100;
export const NOT_A_MEMBER = 'Forbidden';

/** A private chat as every transport sees it. */
export interface ChatInfo {
  id: string;
  title: string | null;
  creatorId: number;
  createdAt: string;
  /** Its place in `chats` (newest first). */
  seq: number;
  memberIds: number[];
}

/** Are these content users? The ids of those that are (content's UserService.GetUsers over gRPC). */
export interface UserCheck {
  existing(ids: readonly number[]): Promise<number[]>;
}

export interface MembersRepo {
  createChat(chat: { id: string; title: string | null; creatorId: number; memberIds: number[] }): Promise<ChatInfo>;
  /** A private chat with its members, or null. */
  chatInfo(chatId: string): Promise<ChatInfo | null>;
  isMember(chatId: string, userId: number): Promise<boolean>;
  addMembers(chatId: string, userIds: readonly number[]): Promise<void>;
  /** Whether they were a member. */
  removeMember(chatId: string, userId: number): Promise<boolean>;
  /** The private chats `userId` is a member of with seq < `beforeSeq` (all when null), newest first. */
  chatsOf(userId: number, limit: number, beforeSeq: number | null): Promise<ChatInfo[]>;
}

/** `chats` pages newest first by the chat's sequence number. */
const SEQ = idCursor('chat:');
export const CHAT_CURSOR: CursorCodec<{ seq: number }> = {
  encode: (p) => SEQ.encode({ id: p.seq }),
  decode: (c) => ({ seq: SEQ.decode(c).id }),
};

/** `memberIds`: 1–MAX_MEMBERS ids, duplicates dropped (400 for anything else). */
export function memberIdsOf(raw: unknown, field = 'memberIds'): number[] {
  if (!Array.isArray(raw)) throw badRequest(`${field} is required`);
  const ids = [...new Set(raw.map((id) => parseId(id, { min: 1 })))];
  if (ids.length > MAX_MEMBERS) throw badRequest(`${field} must have at most ${MAX_MEMBERS} ids`);
  return ids;
}

export const titleOf = (raw: unknown): string | null => (raw === undefined || raw === null ? null : chatText(raw, 'title', MAX_TITLE));

/** Membership: who may create, read, write and change private chats. */
export class Members {
  constructor(
    private readonly repo: MembersRepo,
    private readonly users: UserCheck,
  ) {}

  /** Throws FORBIDDEN unless `userId` may use `chatId` (free-form chats: everyone). */
  async requireAccess(chatId: string, userId: number): Promise<void> {
    if (isPrivateChatId(chatId) && !(await this.repo.isMember(chatId, userId))) throw forbidden(NOT_A_MEMBER);
  }

  async create(caller: Caller | null, input: { title: unknown; memberIds: unknown }): Promise<ChatInfo> {
    const creator = requireCaller(caller);
    const title = titleOf(input.title);
    const ids = memberIdsOf(input.memberIds).filter((id) => id !== creator.id);
    await this.requireUsers(ids);
    const id = PRIVATE_PREFIX + randomBytes(16).toString('base64url');
    return this.repo.createChat({ id, title, creatorId: creator.id, memberIds: [creator.id, ...ids] });
  }

  chats(caller: Caller | null, args: ConnectionArgs) {
    const me = requireCaller(caller);
    return keysetConnection(CHAT_CURSOR, args, (limit, after) => this.repo.chatsOf(me.id, limit, after?.seq ?? null));
  }

  /** The creator adds members (already members: no change). */
  async add(caller: Caller | null, input: { chatId: unknown; memberIds: unknown }): Promise<ChatInfo> {
    const me = requireCaller(caller);
    const chat = await this.privateChat(input.chatId, me.id);
    if (chat.creatorId !== me.id) throw forbidden();
    const ids = memberIdsOf(input.memberIds);
    if (new Set([...chat.memberIds, ...ids]).size > MAX_MEMBERS) throw badRequest(`A chat has at most ${MAX_MEMBERS} members`);
    await this.requireUsers(ids.filter((id) => !chat.memberIds.includes(id)));
    await this.repo.addMembers(chat.id, ids);
    return (await this.repo.chatInfo(chat.id))!;
  }

  /** The creator removes anyone but themself; a member removes themself. Resolves with the chat and whom it removed. */
  async remove(caller: Caller | null, input: { chatId: unknown; userId: unknown }): Promise<{ chat: ChatInfo; removed: number | null }> {
    const me = requireCaller(caller);
    const chat = await this.privateChat(input.chatId, me.id);
    const userId = parseId(input.userId, { min: 1 });
    if (chat.creatorId !== me.id && userId !== me.id) throw forbidden();
    if (userId === chat.creatorId) throw badRequest('The creator cannot be removed');
    const removed = (await this.repo.removeMember(chat.id, userId)) ? userId : null;
    return { chat: (await this.repo.chatInfo(chat.id))!, removed };
  }

  /** A private chat the caller is a member of; FORBIDDEN otherwise (an unknown id too: nothing is revealed). */
  private async privateChat(rawChatId: unknown, userId: number): Promise<ChatInfo> {
    const chatId = chatIdOf(rawChatId);
    const chat = isPrivateChatId(chatId) ? await this.repo.chatInfo(chatId) : null;
    if (!chat || !chat.memberIds.includes(userId)) throw forbidden(NOT_A_MEMBER);
    return chat;
  }

  private async requireUsers(ids: readonly number[]): Promise<void> {
    const known = new Set(await this.users.existing(ids));
    const unknown = ids.filter((id) => !known.has(id));
    if (unknown.length > 0) throw badRequest(`memberIds: no such user: ${unknown.join(', ')}`);
  }
}
