import { ActiveOperationsAnswer, parseWire, SupergraphAnswer } from './wire';

/** The shared wire schemas' own rules; services/registry/test/wire.test.ts reads the registry's real answers with them. */
const answer = {
  composition: 3,
  hash: 'abc',
  createdAt: '2026-01-01T00:00:00Z',
  supergraph: 'schema {}',
  routes: {},
  openapi: {},
  services: { catalog: 2 },
};

describe('GET /v1/supergraph', () => {
  it('is read whole; members it does not declare are dropped', () => {
    expect(parseWire(SupergraphAnswer, { ...answer, extra: true })).toEqual(answer);
  });

  it('createdAt and services, which only inform logs, are read as "" and {} when absent or not theirs', () => {
    const { createdAt: _c, services: _s, ...rest } = answer;
    expect(parseWire(SupergraphAnswer, rest)).toEqual({ ...rest, createdAt: '', services: {} });
    expect(parseWire(SupergraphAnswer, { ...answer, createdAt: 1, services: 'x' })).toMatchObject({ createdAt: '', services: {} });
  });

  it.each([
    [null, /^Invalid input/],
    [{ ...answer, composition: 1.5 }, /^composition: /],
    [{ ...answer, hash: '' }, /^hash: missing$/],
    [{ ...answer, supergraph: 1 }, /^supergraph: /],
    [{ ...answer, routes: null }, /^routes: not an object$/],
    [{ ...answer, openapi: 'x' }, /^openapi: not an object$/],
  ])('refuses %j, naming the member', (json, message) => {
    expect(() => parseWire(SupergraphAnswer, json)).toThrow(message);
  });
});

it('GET /v1/operations/active: operations with a non-empty id', () => {
  const op = { id: 'a', body: '{ x }', client: 'web', version: '1' };
  expect(ActiveOperationsAnswer.parse({ operations: [op] })).toEqual({ operations: [op] });
  expect(ActiveOperationsAnswer.safeParse({ operations: [{ ...op, id: '' }] }).success).toBe(false);
  expect(ActiveOperationsAnswer.safeParse({}).success).toBe(false);
});
