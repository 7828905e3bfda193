import { status } from '@grpc/grpc-js';
import {
  ERROR_KINDS,
  HaloError,
  INTERNAL_MESSAGE,
  badRequest,
  conflict,
  forbidden,
  fromGrpcError,
  isHaloError,
  notFound,
  toGrpcError,
  toRestError,
  unauthenticated,
  unavailable,
  type ErrorKind,
} from './errors';
import { toGraphQLError } from '../graphql/graphql';

// The contract table, written out independently of ERROR_KINDS so a change to it fails here.
const EXPECTED: [ErrorKind, number, string, status][] = [
  ['BAD_REQUEST', 400, 'BAD_USER_INPUT', status.INVALID_ARGUMENT],
  ['UNAUTHENTICATED', 401, 'UNAUTHENTICATED', status.UNAUTHENTICATED],
  ['FORBIDDEN', 403, 'FORBIDDEN', status.PERMISSION_DENIED],
  ['NOT_FOUND', 404, 'NOT_FOUND', status.NOT_FOUND],
  ['METHOD_NOT_ALLOWED', 405, 'METHOD_NOT_ALLOWED', status.UNIMPLEMENTED],
  ['CONFLICT', 409, 'CONFLICT', status.ALREADY_EXISTS],
  ['PAYLOAD_TOO_LARGE', 413, 'PAYLOAD_TOO_LARGE', status.RESOURCE_EXHAUSTED],
  ['UNPROCESSABLE', 422, 'BAD_USER_INPUT', status.FAILED_PRECONDITION],
  ['TOO_MANY_REQUESTS', 429, 'RATE_LIMITED', status.RESOURCE_EXHAUSTED],
  ['UNAVAILABLE', 503, 'SERVICE_UNAVAILABLE', status.UNAVAILABLE],
  ['REPLAY_TOO_LONG', 409, 'REPLAY_TOO_LONG', status.FAILED_PRECONDITION],
  ['INTERNAL', 500, 'INTERNAL_SERVER_ERROR', status.INTERNAL],
];

describe('error kinds', () => {
  it('covers every kind in the table', () => {
    expect(Object.keys(ERROR_KINDS).sort()).toEqual(EXPECTED.map(([k]) => k).sort());
  });

  describe.each(EXPECTED)('%s', (kind, http, graphql, grpc) => {
    const err = new HaloError(kind, `message for ${kind}`);

    it(`is REST ${http} with { error }`, () => {
      expect(err.httpStatus).toBe(http);
      expect(toRestError(err)).toEqual({ status: http, body: { error: `message for ${kind}` } });
    });

    it(`is GraphQL ${graphql}`, () => {
      const gql = toGraphQLError(err);
      expect(gql.message).toBe(`message for ${kind}`);
      expect(gql.extensions.code).toBe(graphql);
    });

    it(`is gRPC ${status[grpc]}`, () => {
      expect(toGrpcError(err)).toEqual({ code: grpc, details: `message for ${kind}` });
    });
  });
});

describe('HaloError', () => {
  it('is an Error with a name, a kind and optional extra members', () => {
    const err = conflict('Already reviewed', { status: 'processing' });
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('HaloError');
    expect(err.kind).toBe('CONFLICT');
    expect(isHaloError(err)).toBe(true);
    expect(isHaloError(new Error('x'))).toBe(false);
    expect(isHaloError({ kind: 'CONFLICT', message: 'duck' })).toBe(false);
  });

  it('puts extra members in the REST body and GraphQL extensions', () => {
    const err = badRequest('Bad rating', { field: 'rating' });
    expect(toRestError(err)).toEqual({ status: 400, body: { error: 'Bad rating', field: 'rating' } });
    expect(toGraphQLError(err).extensions).toEqual({ code: 'BAD_USER_INPUT', field: 'rating' });
  });

  it('has helpers with sensible default messages', () => {
    expect([forbidden().kind, forbidden().message]).toEqual(['FORBIDDEN', 'Forbidden']);
    expect([notFound().kind, notFound().message]).toEqual(['NOT_FOUND', 'Not found']);
    expect([unavailable().kind, unavailable().message]).toEqual(['UNAVAILABLE', 'Service unavailable']);
    expect([unauthenticated('Token required').kind, unauthenticated('Token required').message]).toEqual([
      'UNAUTHENTICATED',
      'Token required',
    ]);
  });
});

describe('unknown errors', () => {
  const secret = new Error('connect ECONNREFUSED 10.0.0.7:5432 password=hunter2');

  it.each([secret, 'a string', null, undefined, { message: 'object' }])('%p is a bare 500 on REST', (err) => {
    expect(toRestError(err)).toEqual({ status: 500, body: { error: INTERNAL_MESSAGE } });
  });

  it('is INTERNAL on gRPC without the original message', () => {
    expect(toGrpcError(secret)).toEqual({ code: status.INTERNAL, details: 'Internal server error' });
  });

  it('never leaks the message', () => {
    expect(JSON.stringify(toRestError(secret))).not.toContain('hunter2');
    expect(JSON.stringify(toGrpcError(secret))).not.toContain('hunter2');
  });
});

describe('fromGrpcError', () => {
  // Kinds whose gRPC status maps back to the same kind and keeps the peer's message.
  const roundTrips: ErrorKind[] = [
    'BAD_REQUEST',
    'UNAUTHENTICATED',
    'FORBIDDEN',
    'NOT_FOUND',
    'CONFLICT',
    'UNPROCESSABLE',
    'TOO_MANY_REQUESTS',
  ];

  it.each(roundTrips)('%s survives a round trip through gRPC', (kind) => {
    const back = fromGrpcError(toGrpcError(new HaloError(kind, 'peer said so')));
    expect(back).toBeInstanceOf(HaloError);
    expect(back.kind).toBe(kind);
    expect(back.message).toBe('peer said so');
  });

  it('turns UNAVAILABLE and DEADLINE_EXCEEDED into UNAVAILABLE with a generic message', () => {
    for (const code of [status.UNAVAILABLE, status.DEADLINE_EXCEEDED]) {
      const err = fromGrpcError({ code, details: 'No connection established. Last error: 10.0.0.7' });
      expect(err.kind).toBe('UNAVAILABLE');
      expect(err.message).toBe('Upstream service unavailable');
    }
  });

  it('shares RESOURCE_EXHAUSTED between 413 and 429, reading it back as TOO_MANY_REQUESTS', () => {
    expect(fromGrpcError(toGrpcError(new HaloError('PAYLOAD_TOO_LARGE', 'big'))).kind).toBe('TOO_MANY_REQUESTS');
  });

  it.each([status.INTERNAL, status.UNKNOWN, status.UNIMPLEMENTED, status.DATA_LOSS, status.CANCELLED, undefined])(
    'turns status %p into INTERNAL without the peer details',
    (code) => {
      const err = fromGrpcError({ code, details: 'stack trace from the peer' });
      expect(err.kind).toBe('INTERNAL');
      expect(err.message).toBe(INTERNAL_MESSAGE);
      expect(toRestError(err)).toEqual({ status: 500, body: { error: INTERNAL_MESSAGE } });
    },
  );

  it('falls back to the kind name when the peer sent no details', () => {
    expect(fromGrpcError({ code: status.NOT_FOUND }).message).toBe('NOT_FOUND');
  });
});
