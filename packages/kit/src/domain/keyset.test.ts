import { HaloError } from '../errors/errors';
import { alignById, groupByKey } from './ids';
import { connectionArgs, idCursor, keysetConnection, timeIdCursor, toConnection } from './keyset';

const byId = idCursor('thing:');
const byTime = timeIdCursor('post:');
const invalid = expect.objectContaining({ kind: 'BAD_REQUEST', message: 'Invalid cursor' });

describe('cursors', () => {
  it('are opaque and round-trip', () => {
    const c = byId.encode({ id: 42 });
    expect(c).not.toMatch(/42/);
    expect(byId.decode(c)).toEqual({ id: 42 });
    const t = byTime.encode({ createdAt: '2026-01-01T09:00:00.000Z', id: 7 });
    expect(t).not.toContain('2026');
    expect(byTime.decode(t)).toEqual({ createdAt: '2026-01-01T09:00:00.000Z', id: 7 });
  });

  it.each([
    ['another codec’s cursor', Buffer.from('post:42').toString('base64url')],
    ['not a number', Buffer.from('thing:x').toString('base64url')],
    ['leading zeros', Buffer.from('thing:007').toString('base64url')],
    ['padding', `${idCursor('thing:').encode({ id: 42 })}=`],
    ['a bare id', '42'],
  ])('refuses %s', (_, raw) => expect(() => byId.decode(raw)).toThrow(invalid));

  it.each([
    ['a date Postgres would reject', '2026-02-30T00:00:00.000Z|1'],
    ['a non-canonical date', '2026-01-01|1'],
    ['no id', '2026-01-01T09:00:00.000Z|'],
    ['too long an id', '2026-01-01T09:00:00.000Z|1234567890123456'],
  ])('refuses a time cursor with %s', (_, text) => {
    expect(() => byTime.decode(Buffer.from(`post:${text}`).toString('base64url'))).toThrow(invalid);
  });
});

describe('connections', () => {
  it('first defaults to 10 and must be an integer 0–100', () => {
    expect(connectionArgs(byId, {})).toEqual({ first: 10, after: null });
    expect(connectionArgs(byId, { first: 0, after: byId.encode({ id: 3 }) })).toEqual({ first: 0, after: { id: 3 } });
    for (const first of [-1, 101, 1.5]) {
      expect(() => connectionArgs(byId, { first })).toThrow(expect.objectContaining({ message: 'first must be between 0 and 100' }));
    }
    expect(() => connectionArgs(byId, { after: 'nope' })).toThrow(HaloError);
  });

  it('an extra row means another page; the end cursor is the last edge’s', () => {
    const rows = [{ id: 1 }, { id: 2 }, { id: 3 }];
    expect(toConnection(byId, rows, 2)).toEqual({
      edges: [
        { cursor: byId.encode({ id: 1 }), node: { id: 1 } },
        { cursor: byId.encode({ id: 2 }), node: { id: 2 } },
      ],
      pageInfo: { hasNextPage: true, endCursor: byId.encode({ id: 2 }) },
    });
    expect(toConnection(byId, rows, 3).pageInfo).toEqual({ hasNextPage: false, endCursor: byId.encode({ id: 3 }) });
    expect(toConnection(byId, [], 0).pageInfo).toEqual({ hasNextPage: false, endCursor: null });
  });

  it('keysetConnection fetches first + 1 rows after the decoded position, and nothing for first: 0', async () => {
    const calls: [number, { id: number } | null][] = [];
    const fetchAfter = async (limit: number, after: { id: number } | null) => {
      calls.push([limit, after]);
      const start = (after?.id ?? 0) + 1;
      return Array.from({ length: limit }, (_, i) => ({ id: start + i, name: `n${start + i}` }));
    };
    const page = await keysetConnection(byId, { first: 2, after: byId.encode({ id: 5 }) }, fetchAfter);
    expect(page.edges.map((e) => e.node)).toEqual([
      { id: 6, name: 'n6' },
      { id: 7, name: 'n7' },
    ]);
    expect(page.pageInfo.hasNextPage).toBe(true);
    expect(calls).toEqual([[3, { id: 5 }]]);
    expect(await keysetConnection(byId, { first: 0 }, fetchAfter)).toEqual({
      edges: [],
      pageInfo: { hasNextPage: false, endCursor: null },
    });
    expect(calls).toHaveLength(1);
  });
});

describe('batch answers', () => {
  it('alignById answers in the order asked, null where nothing was found', () => {
    expect(alignById([3, 1, 9], [{ id: 1 }, { id: 3 }])).toEqual([{ id: 3 }, { id: 1 }, null]);
  });

  it('groupByKey groups rows under each key, keeping their order, with [] for none', () => {
    const rows = [
      { k: 2, n: 'a' },
      { k: 1, n: 'b' },
      { k: 2, n: 'c' },
      { k: 5, n: 'stray' },
    ];
    expect(groupByKey([1, 2, 3], rows, (r) => r.k)).toEqual([
      [{ k: 1, n: 'b' }],
      [
        { k: 2, n: 'a' },
        { k: 2, n: 'c' },
      ],
      [],
    ]);
  });
});
