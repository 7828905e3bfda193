import { GraphQLError, buildSchema, graphql } from 'graphql';
import { HaloError, badRequest, forbidden, notFound, type ErrorKind } from '../errors/errors';
import { formatGraphQLError, toGraphQLError } from './graphql';
import { capturingLogger } from '../testing';

const schema = buildSchema(`
  type Query {
    missing: String
    forbidden: String
    invalid: String
    crash: String
    graphqlError: String
    ok: String
  }
`);

const rootValue = {
  missing: () => {
    throw notFound('Post 7 not found');
  },
  forbidden: () => Promise.reject(forbidden()),
  invalid: () => {
    throw badRequest('Rating must be 1-5', { field: 'rating' });
  },
  crash: () => {
    throw new Error('connect ECONNREFUSED 10.0.0.7:5432 password=hunter2');
  },
  graphqlError: () => {
    throw new GraphQLError('Deliberate', { extensions: { code: 'CUSTOM' } });
  },
  ok: () => 'fine',
};

/** Runs a query for real and formats its errors the way Apollo's `formatError` would. */
async function run(source: string) {
  const { logger, lines } = capturingLogger();
  const format = formatGraphQLError(logger);
  const result = await graphql({ schema, source, rootValue });
  const errors = (result.errors ?? []).map((e) => format(e.toJSON(), e));
  return { data: result.data, errors, lines };
}

describe('formatGraphQLError', () => {
  it.each<[string, string, string]>([
    ['missing', 'NOT_FOUND', 'Post 7 not found'],
    ['forbidden', 'FORBIDDEN', 'Forbidden'],
    ['invalid', 'BAD_USER_INPUT', 'Rating must be 1-5'],
  ])('gives a HaloError from %s its code and message', async (field, code, message) => {
    const { errors, data } = await run(`{ ${field} ok }`);
    expect(data).toEqual({ [field]: null, ok: 'fine' });
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ message, path: [field], extensions: { code } });
  });

  it('keeps a HaloError’s extra members in extensions', async () => {
    const { errors } = await run('{ invalid }');
    expect(errors[0]!.extensions).toEqual({ code: 'BAD_USER_INPUT', field: 'rating' });
  });

  it('turns an unexpected error into INTERNAL_SERVER_ERROR with a generic message, and logs it', async () => {
    const { errors, lines } = await run('{ crash }');
    expect(errors).toEqual([{ message: 'Internal server error', path: ['crash'], extensions: { code: 'INTERNAL_SERVER_ERROR' } }]);
    expect(JSON.stringify(errors)).not.toMatch(/hunter2|ECONNREFUSED|stacktrace/);
    expect(lines).toContainEqual(expect.objectContaining({ level: 50, msg: 'resolver failed', path: ['crash'] }));
  });

  it('passes GraphQL’s own errors through', async () => {
    const { errors } = await run('{ graphqlError }');
    expect(errors[0]).toMatchObject({ message: 'Deliberate', extensions: { code: 'CUSTOM' } });
    const invalid = await graphql({ schema, source: '{ nope }' });
    const formatted = invalid.errors![0]!.toJSON();
    expect(formatGraphQLError(capturingLogger().logger)(formatted, invalid.errors![0])).toBe(formatted);
  });

  it('handles an error given without a GraphQLError wrapper', () => {
    const { logger } = capturingLogger();
    const format = formatGraphQLError(logger);
    expect(format({ message: 'x' }, notFound('gone'))).toMatchObject({ message: 'gone', extensions: { code: 'NOT_FOUND' } });
    expect(format({ message: 'x' }, new Error('secret'))).toEqual({
      message: 'Internal server error',
      path: undefined,
      extensions: { code: 'INTERNAL_SERVER_ERROR' },
    });
  });
});

describe('toGraphQLError', () => {
  it.each<[ErrorKind, string]>([
    ['UNAUTHENTICATED', 'UNAUTHENTICATED'],
    ['TOO_MANY_REQUESTS', 'RATE_LIMITED'],
    ['UNAVAILABLE', 'SERVICE_UNAVAILABLE'],
  ])('maps %s to %s', (kind, code) => {
    const err = toGraphQLError(new HaloError(kind, 'm'));
    expect(err).toBeInstanceOf(GraphQLError);
    expect(err.extensions.code).toBe(code);
  });
});
