import { boundaryOf, mergePayload, MultipartReader, type IncrementalPayload } from './incremental';

/** The gateway's framing of three payloads (Apollo Server's and the Router's: boundary `-`). */
const PAYLOADS: IncrementalPayload[] = [
  { hasNext: true, data: { product: { name: 'P' }, list: [{ id: 1 }, { id: 2 }] } },
  { hasNext: true, incremental: [{ data: { reviews: ['r'] }, path: ['product'], label: 'a' }] },
  {
    hasNext: false,
    incremental: [
      { data: { n: 1 }, path: ['list', 0] },
      { data: { n: null }, path: ['list', 1], errors: [{ message: 'no n', path: ['list', 1, 'n'] }] },
    ],
  },
];
const BODY =
  '\r\n---' +
  PAYLOADS.map(
    (p, i) =>
      `\r\ncontent-type: application/json; charset=utf-8\r\n\r\n${JSON.stringify(p)}\r\n---${i === PAYLOADS.length - 1 ? '--' : ''}`,
  ).join('') +
  '\r\n';

describe('multipart/mixed parts (deferSpec=20220824)', () => {
  it('reads every part whatever the chunking, and sees the closing delimiter', () => {
    for (const size of [1, 2, 3, 7, 64, BODY.length]) {
      const reader = new MultipartReader('-');
      const got: IncrementalPayload[] = [];
      for (let i = 0; i < BODY.length; i += size) got.push(...reader.push(BODY.slice(i, i + size)));
      expect(got).toEqual(PAYLOADS);
      expect(reader.done).toBe(true);
    }
  });

  it('takes the boundary the Content-Type names', () => {
    expect(boundaryOf('multipart/mixed; boundary="-"; deferSpec=20220824')).toBe('-');
    expect(boundaryOf('multipart/mixed;boundary=graphql;deferSpec=20220824')).toBe('graphql');
    expect(boundaryOf('multipart/mixed')).toBe('-');
  });

  it('merges each payload at its path, keeping earlier snapshots unchanged', () => {
    const first = mergePayload(null, PAYLOADS[0]!);
    const second = mergePayload(first, PAYLOADS[1]!);
    const third = mergePayload(second, PAYLOADS[2]!);
    expect(first).toEqual({ data: { product: { name: 'P' }, list: [{ id: 1 }, { id: 2 }] } });
    expect(second.data).toEqual({ product: { name: 'P', reviews: ['r'] }, list: [{ id: 1 }, { id: 2 }] });
    expect(third).toEqual({
      data: {
        product: { name: 'P', reviews: ['r'] },
        list: [
          { id: 1, n: 1 },
          { id: 2, n: null },
        ],
      },
      errors: [{ message: 'no n', path: ['list', 1, 'n'] }],
    });
  });
});
