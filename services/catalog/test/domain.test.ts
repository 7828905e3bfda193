import { connectionArgs, toConnection } from '@halo/kit/domain';
import { HaloError } from '@halo/kit/errors';
import {
  centsToPrice,
  listQuery,
  newProductFields,
  offsetOf,
  pageMeta,
  positiveIntOr,
  PRODUCT_CURSOR,
  productChanges,
} from '../src/domain/rules';

const encodeCursor = (id: number) => PRODUCT_CURSOR.encode({ id });

/** The catalog's rules without I/O. */

const badRequest = (message: string) => expect.objectContaining({ kind: 'BAD_REQUEST', message });

describe('page and limit parsing (spec: unparsable or 0 → default)', () => {
  it.each([
    ['1', 1],
    ['7', 7],
    ['007', 7],
    [3, 3],
    ['9007199254740991', 9007199254740991],
  ])('%p → %p', (raw, n) => expect(positiveIntOr(raw, 10)).toBe(n));

  it.each([
    '0',
    0,
    'abc',
    '-1',
    -1,
    '1.5',
    1.5,
    '',
    ' 2',
    '2 ',
    '+2',
    '1e3',
    '0x10',
    'Infinity',
    NaN,
    '9007199254740992',
    null,
    undefined,
    ['2'],
    { n: 2 },
  ])('%p → the default', (raw) => expect(positiveIntOr(raw, 10)).toBe(10));

  it('caps limit at 100 and keeps the other defaults', () => {
    expect(listQuery({ limit: '500' })).toEqual({ page: 1, limit: 100, category: null, sort: 'id', order: 'asc' });
    expect(listQuery({ page: 0, limit: -3 })).toMatchObject({ page: 1, limit: 10 });
  });
});

describe('sort, order and category', () => {
  it('accepts exactly the whitelisted names', () => {
    for (const sort of ['id', 'name', 'price', 'created_at'] as const) {
      for (const order of ['asc', 'desc'] as const) expect(listQuery({ sort, order })).toMatchObject({ sort, order });
    }
  });

  it.each([['PRICE'], ['category'], [['price']], [1]])('sort %p → Invalid sort', (sort) => {
    expect(() => listQuery({ sort })).toThrow(badRequest('Invalid sort'));
  });

  it.each([['DESC'], ['up'], [['asc']]])('order %p → Invalid order', (order) => {
    expect(() => listQuery({ order })).toThrow(badRequest('Invalid order'));
  });

  it('absent, null or empty means "not given"; category is kept exactly', () => {
    expect(listQuery({ sort: '', order: null, category: '' })).toMatchObject({ sort: 'id', order: 'asc', category: null });
    expect(listQuery({ category: ' Books ' }).category).toBe(' Books ');
    expect(() => listQuery({ category: ['a', 'b'] })).toThrow(badRequest('Invalid category'));
  });
});

describe('pagination metadata', () => {
  it.each([
    [{ page: 1, limit: 10 }, 25, { totalPages: 3, hasNext: true, hasPrev: false }],
    [{ page: 3, limit: 10 }, 25, { totalPages: 3, hasNext: false, hasPrev: true }],
    [{ page: 5, limit: 5 }, 25, { totalPages: 5, hasNext: false, hasPrev: true }],
    [{ page: 4, limit: 5 }, 25, { totalPages: 5, hasNext: true, hasPrev: true }],
    [{ page: 9, limit: 10 }, 25, { totalPages: 3, hasNext: false, hasPrev: true }],
    [{ page: 1, limit: 10 }, 0, { totalPages: 0, hasNext: false, hasPrev: false }],
    [{ page: 1, limit: 100 }, 100, { totalPages: 1, hasNext: false, hasPrev: false }],
    [{ page: 1, limit: 100 }, 101, { totalPages: 2, hasNext: true, hasPrev: false }],
  ])('%j of %i → %j', (q, total, rest) => {
    expect(pageMeta(q, total)).toEqual({ ...q, total, ...rest });
  });

  it('skips (page - 1) * limit', () => {
    expect(offsetOf({ page: 1, limit: 10 })).toBe(0);
    expect(offsetOf({ page: 4, limit: 7 })).toBe(21);
  });
});

describe('money', () => {
  it.each([
    [19.99, 1999],
    [0, 0],
    [0.01, 1],
    [4.35, 435],
    [1.1, 110],
    [100, 10000],
    [9999999999.99, 999999999999],
  ])('price %p → %p cents, and back exactly', (price, cents) => {
    expect(newProductFields({ name: 'n', category: 'c', price }).priceCents).toBe(cents);
    expect(centsToPrice(cents)).toBe(price);
    expect(JSON.stringify(centsToPrice(cents))).toBe(String(price));
  });

  it.each([1.005, 0.001, -0.01, 0.1 + 0.2, Infinity, NaN])('price %p is refused', (price) => {
    expect(() => newProductFields({ name: 'n', category: 'c', price })).toThrow(
      badRequest('price must be a number >= 0 with at most 2 decimals'),
    );
  });

  it('v2 takes integer cents under price_cents', () => {
    expect(newProductFields({ name: 'n', category: 'c', price_cents: 1999 }, 'price_cents').priceCents).toBe(1999);
    expect(() => newProductFields({ name: 'n', category: 'c', price: 19.99 }, 'price_cents')).toThrow(
      badRequest('price_cents is required'),
    );
    expect(() => newProductFields({ name: 'n', category: 'c', price_cents: 1.5 }, 'price_cents')).toThrow(
      badRequest('price_cents must be an integer >= 0'),
    );
  });
});

describe('product fields', () => {
  it('trims, defaults description to empty and ignores unknown members', () => {
    expect(newProductFields({ name: ' A ', category: ' b ', price: 1, id: 9, extra: true })).toEqual({
      name: 'A',
      description: '',
      category: 'b',
      priceCents: 100,
    });
  });

  it('reports the first invalid field', () => {
    expect(() => newProductFields({})).toThrow(badRequest('name is required'));
    expect(() => newProductFields({ name: 'a' })).toThrow(badRequest('category is required'));
    expect(() => newProductFields({ name: 'a', category: 'b' })).toThrow(badRequest('price is required'));
  });

  it('a partial update keeps only what was given, and needs something', () => {
    expect(productChanges({ price: 2.5 })).toEqual({ priceCents: 250 });
    expect(productChanges({ description: null })).toEqual({ description: '' });
    expect(() => productChanges({ id: 1 })).toThrow(badRequest('No fields to update'));
    expect(() => productChanges(null)).toThrow(badRequest('No fields to update'));
  });
});

describe('connection cursors', () => {
  it('are opaque and round-trip', () => {
    const c = encodeCursor(42);
    expect(c).not.toMatch(/42/);
    expect(PRODUCT_CURSOR.decode(c)).toEqual({ id: 42 });
  });

  it.each(['', '42', Buffer.from('post:42').toString('base64url'), Buffer.from('product:x').toString('base64url'), `${encodeCursor(42)}=`])(
    '%p is refused',
    (raw) => expect(() => connectionArgs(PRODUCT_CURSOR, { after: raw || 'x' })).toThrow(HaloError),
  );

  it('first defaults to 10 and must be 0–100', () => {
    expect(connectionArgs(PRODUCT_CURSOR, {})).toEqual({ first: 10, after: null });
    expect(() => connectionArgs(PRODUCT_CURSOR, { first: 101 })).toThrow(badRequest('first must be between 0 and 100'));
    expect(() => connectionArgs(PRODUCT_CURSOR, { first: -1 })).toThrow(badRequest('first must be between 0 and 100'));
  });

  it('an extra row means another page', () => {
    const rows = [{ id: 1 }, { id: 2 }, { id: 3 }];
    expect(toConnection(PRODUCT_CURSOR, rows, 2).pageInfo).toEqual({ hasNextPage: true, endCursor: encodeCursor(2) });
    expect(toConnection(PRODUCT_CURSOR, rows, 3).pageInfo).toEqual({ hasNextPage: false, endCursor: encodeCursor(3) });
    expect(toConnection(PRODUCT_CURSOR, [], 0).pageInfo).toEqual({ hasNextPage: false, endCursor: null });
  });
});
