import type { Caller } from '@halo/kit/auth';
import { HaloError } from '@halo/kit/errors';
import { messageOf } from '@halo/kit/testing';
import { Chat, type ChatRepo, type MessageBus } from '../src/domain/chat';
import type { Message, NewMessage } from '../src/domain/model';
import { chatIdOf, MAX_REPLAY, messageText } from '../src/domain/rules';
import { Inbox } from '../src/domain/inbox';
import { ResumedStream } from '../src/domain/resume';

/** chat's rules without I/O: validation, the order of checks, the all-or-nothing send, the subscriber's inbox. */

const caller: Caller = { id: 7, name: 'u', role: 'user', scopes: null, apiKeyId: null };

describe('rules', () => {
  it.each([
    [undefined, 'chatId is required'],
    [null, 'chatId is required'],
    [42, 'chatId is required'],
    ['', 'chatId is required'],
    [' \t\n', 'chatId is required'],
    ['x'.repeat(65), 'chatId must be at most 64 characters'],
    [` ${'x'.repeat(64)} `, null],
    ['a\u0000', 'chatId must not contain NUL characters'],
  ])('chatId %j → %s', (raw, message) => {
    expect(messageOf(() => chatIdOf(raw))).toBe(message);
  });

  it.each([
    [undefined, 'text is required'],
    ['   ', 'text is required'],
    ['t'.repeat(2001), 'text must be at most 2000 characters'],
    [`  ${'t'.repeat(2000)}  `, null],
    ['\u0000', 'text must not contain NUL characters'],
  ])('text %j → %s', (raw, message) => {
    expect(messageOf(() => messageText(raw))).toBe(message);
  });

  it('trims: what is stored and published is the trimmed chat id and text', () => {
    expect([chatIdOf('  room  '), messageText('\n hi \n')]).toEqual(['room', 'hi']);
  });
});

/** A repository that behaves like the transaction: the message exists only if publish resolved. */
class FakeRepo implements ChatRepo {
  rows: Message[] = [];
  async appendMessage(m: NewMessage, publish: (message: Message) => Promise<void>): Promise<Message> {
    const message = { ...m, id: this.rows.length + 1, createdAt: new Date(0).toISOString() };
    await publish(message);
    this.rows.push(message);
    return message;
  }
  async messagesPage(chatId: string, limit: number, beforeId: number | null): Promise<Message[]> {
    return this.rows
      .filter((r) => r.chatId === chatId && (beforeId === null || r.id < beforeId))
      .reverse()
      .slice(0, limit);
  }
  async messagesByIds(ids: readonly number[]): Promise<Message[]> {
    return this.rows.filter((r) => ids.includes(r.id));
  }
  async messagesAfter(chatId: string, afterId: number, limit: number): Promise<Message[] | null> {
    if (!this.rows.some((r) => r.id === afterId && r.chatId === chatId)) return null;
    return this.rows.filter((r) => r.chatId === chatId && r.id > afterId).slice(0, limit);
  }
}

const bus = (over: Partial<MessageBus> = {}): MessageBus & { published: Message[] } => {
  const published: Message[] = [];
  return {
    published,
    publish: async (m) => void published.push(m),
    publishRemoval: async () => undefined,
    subscribe: async () =>
      new Inbox<Message>(
        () => undefined,
        10,
        () => new Error('overflow'),
      ),
    ready: async () => undefined,
    ...over,
  };
};

describe('Chat', () => {
  it('checks who before what: anonymous is 401 whatever the input, then 400', async () => {
    const chat = new Chat(new FakeRepo(), bus());
    await expect(chat.sendMessage(null, { chatId: '', text: '' })).rejects.toMatchObject({
      kind: 'UNAUTHENTICATED',
      message: 'Token required',
    });
    await expect(chat.subscribe(null, '')).rejects.toMatchObject({ kind: 'UNAUTHENTICATED' });
    await expect(chat.messages(null, { chatId: '' })).rejects.toThrow('Token required');
    await expect(chat.sendMessage(caller, { chatId: '', text: 'x' })).rejects.toMatchObject({
      kind: 'BAD_REQUEST',
      message: 'chatId is required',
    });
  });

  it('sends once: stored and published together, the author from the caller', async () => {
    const repo = new FakeRepo();
    const b = bus();
    const m = await new Chat(repo, b).sendMessage(caller, { chatId: ' r ', text: ' hi ' });
    expect(m).toMatchObject({ chatId: 'r', text: 'hi', authorId: 7 });
    expect(b.published).toEqual([m]);
    expect(repo.rows).toEqual([m]);
  });

  it('a bus that cannot publish: 503 `Message delivery unavailable`, nothing stored', async () => {
    const repo = new FakeRepo();
    const chat = new Chat(repo, bus({ publish: async () => Promise.reject(new Error('ECONNREFUSED')) }));
    const err = await chat.sendMessage(caller, { chatId: 'r', text: 'hi' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HaloError);
    expect(err).toMatchObject({ kind: 'UNAVAILABLE', message: 'Message delivery unavailable', httpStatus: 503 });
    expect(repo.rows).toEqual([]);
  });

  it('a bus that cannot subscribe: 503, the raw cause never shown', async () => {
    const chat = new Chat(new FakeRepo(), bus({ subscribe: async () => Promise.reject(new Error('Stream isn’t writeable')) }));
    await expect(chat.subscribe(caller, 'r')).rejects.toMatchObject({ kind: 'UNAVAILABLE', message: 'Message delivery unavailable' });
  });

  it('messages: 20 newest by default; anonymous callers may not read entity references', async () => {
    const repo = new FakeRepo();
    const chat = new Chat(repo, bus());
    for (let i = 0; i < 25; i++) await chat.sendMessage(caller, { chatId: 'r', text: `m${i}` });
    const page = await chat.messages(caller, { chatId: 'r' });
    expect(page.edges).toHaveLength(20);
    expect(page.edges[0]!.node.text).toBe('m24');
    expect([chat.mayRead(caller), chat.mayRead(null)]).toEqual([true, false]);
  });
});

describe('Inbox (one subscriber’s undelivered messages)', () => {
  it('hands messages out in push order, waiting when there are none', async () => {
    const inbox = new Inbox<number>(
      () => undefined,
      10,
      () => new Error('overflow'),
    );
    const first = inbox.next();
    inbox.push(1);
    inbox.push(2);
    expect(await first).toEqual({ value: 1, done: false });
    expect(await inbox.next()).toEqual({ value: 2, done: false });
  });

  it('return() ends it once: pending takers get done, onEnd runs once, later pushes are dropped', async () => {
    let ended = 0;
    const inbox = new Inbox<number>(
      () => void ended++,
      10,
      () => new Error('overflow'),
    );
    const waiting = inbox.next();
    await inbox.return();
    await inbox.return();
    inbox.push(3);
    expect(await waiting).toEqual({ value: undefined, done: true });
    expect(await inbox.next()).toEqual({ value: undefined, done: true });
    expect(ended).toBe(1);
  });

  it('a subscriber too far behind fails instead of growing without bound', async () => {
    let ended = 0;
    const inbox = new Inbox<number>(
      () => void ended++,
      3,
      () => new Error('too far behind'),
    );
    for (let i = 0; i < 4; i++) inbox.push(i);
    await expect(inbox.next()).rejects.toThrow('too far behind');
    expect(await inbox.next()).toEqual({ value: undefined, done: true });
    expect(ended).toBe(1);
  });
});

describe('resuming after a message id', () => {
  const take = async <T>(it: AsyncIterator<T>, n: number) => {
    const out: T[] = [];
    for (let i = 0; i < n; i++) out.push((await it.next()).value as T);
    return out;
  };

  it('replays, then goes live dropping what the replay already delivered', async () => {
    const live = new Inbox<{ id: number }>(
      () => undefined,
      10,
      () => new Error('overflow'),
    );
    // Published while the replay was read: 3 and 4 are in both, 5 only live.
    for (const id of [3, 4, 5]) live.push({ id });
    const stream = new ResumedStream([{ id: 2 }, { id: 3 }, { id: 4 }], live, 1);
    expect((await take(stream, 4)).map((m) => m.id)).toEqual([2, 3, 4, 5]);
    live.push({ id: 6 });
    expect(await stream.next()).toEqual({ value: { id: 6 }, done: false });
    await stream.return();
    expect(await stream.next()).toEqual({ value: undefined, done: true });
  });

  it('bad `after`: an invalid id or a message of another chat is 400, and the live subscription is closed', async () => {
    const repo = new FakeRepo();
    let closed = 0;
    const chat = new Chat(
      repo,
      bus({
        subscribe: async () =>
          new Inbox<Message>(
            () => void closed++,
            10,
            () => new Error('overflow'),
          ),
      }),
    );
    const other = await chat.sendMessage(caller, { chatId: 'other', text: 'x' });
    await expect(chat.subscribe(caller, 'r', 'abc')).rejects.toMatchObject({ kind: 'BAD_REQUEST', message: 'Invalid id' });
    await expect(chat.subscribe(caller, 'r', String(other.id))).rejects.toMatchObject({
      kind: 'BAD_REQUEST',
      message: 'after is not a message of this chat',
    });
    expect(closed).toBe(1);
  });

  it('more than MAX_REPLAY behind: REPLAY_TOO_LONG; exactly MAX_REPLAY is replayed', async () => {
    const repo = new FakeRepo();
    const chat = new Chat(repo, bus());
    for (let i = 0; i < MAX_REPLAY + 1; i++) await chat.sendMessage(caller, { chatId: 'r', text: `m${i}` });
    await expect(chat.subscribe(caller, 'r', '1')).resolves.toBeDefined();
    await chat.sendMessage(caller, { chatId: 'r', text: 'one more' });
    await expect(chat.subscribe(caller, 'r', '1')).rejects.toMatchObject({ kind: 'REPLAY_TOO_LONG', extra: { maxReplay: MAX_REPLAY } });
  });
});
