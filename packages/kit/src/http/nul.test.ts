import express from 'express';
import { buildSchema, graphql } from 'graphql';
import request from 'supertest';
import { errorHandler, jsonBody, route } from './http';
import { findNul, refuseNulArguments, refuseNulInput } from './nul';
import { formatGraphQLError } from '../graphql/graphql';
import { capturingLogger } from '../testing';

describe('the NUL rule', () => {
  it('names the first field holding U+0000, nested as a dotted path, and nothing for clean input', () => {
    expect(findNul({ name: 'Kettle', tags: ['a', 'b'], n: 3, ok: true, none: null })).toBeNull();
    expect(findNul({ name: 'a\u0000b' })).toBe('name');
    expect(findNul({ input: { name: 'ok', category: '\u0000' } })).toBe('input.category');
    expect(findNul({ scopes: ['read', 'wr\u0000ite'] })).toBe('scopes.1');
    expect(findNul({ 'k\u0000': 1 })).toBe('body');
    expect(findNul({ o: { 'k\u0000': 1 } })).toBe('o');
    expect(findNul('\u0000', 'text')).toBe('text');
    expect(findNul([{ a: '\u0000' }])).toBe('0.a');
    // Not client text: bytes and dates are not walked.
    expect(findNul({ raw: Buffer.from([0, 0]), at: new Date(0) })).toBeNull();
  });

  it('stops at its depth cap instead of overflowing the stack', () => {
    let deep: unknown = 'x\u0000';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(findNul({ deep })).toBeNull();
  });

  it('REST: the query and the JSON body answer 400 naming the field', async () => {
    const app = express();
    app.use(jsonBody(1024 * 1024));
    app.use(refuseNulInput());
    app.all('/echo', (req, res) => void res.json({ body: req.body as unknown, query: req.query }));
    const router = express.Router();
    route(router, '/things/:thingId', { get: (req, res) => void res.json(req.params) });
    app.use(router);
    app.use(errorHandler());
    const param = await request(app).get('/things/a%00b');
    expect([param.status, param.body]).toEqual([400, { error: 'thingId must not contain NUL characters' }]);
    expect((await request(app).get('/things/ab')).body).toEqual({ thingId: 'ab' });
    const query = await request(app).get('/echo?category=%00&page=1');
    expect([query.status, query.body]).toEqual([400, { error: 'category must not contain NUL characters' }]);
    const body = await request(app)
      .post('/echo')
      .send({ user: { name: 'x\u0000' } });
    expect([body.status, body.body]).toEqual([400, { error: 'user.name must not contain NUL characters' }]);
    // The escaped backslash is text, not a NUL; and a clean request passes untouched.
    const text = await request(app).post('/echo').set('content-type', 'application/json').send('{"name":"\\\\u0000"}');
    expect([text.status, text.body.body]).toEqual([200, { name: '\\u0000' }]);
    expect((await request(app).get('/echo?category=books')).status).toBe(200);
  });

  it('GraphQL: the field whose argument holds a NUL is BAD_USER_INPUT naming it; the others resolve', async () => {
    const schema = refuseNulArguments(
      buildSchema('input P { name: String! } type Query { echo(text: String, p: P): String, plain: String }'),
    );
    // The default resolver calls these (root value methods get the arguments first).
    const rootValue = { echo: (args: { text?: string; p?: { name: string } }) => args.text ?? args.p?.name, plain: () => 'plain' };
    const { logger } = capturingLogger();
    const format = formatGraphQLError(logger);
    const run = async (source: string, variableValues?: Record<string, unknown>) => {
      const result = await graphql({ schema, source, rootValue, ...(variableValues ? { variableValues } : {}) });
      return { data: result.data, errors: result.errors?.map((e) => format(e.toJSON(), e)) };
    };
    expect(await run('query($t: String) { echo(text: $t) plain }', { t: 'a\u0000' })).toEqual({
      data: { echo: null, plain: 'plain' },
      errors: [expect.objectContaining({ message: 'text must not contain NUL characters', extensions: { code: 'BAD_USER_INPUT' } })],
    });
    const inline = await run('{ echo(p: { name: "\\u0000" }) }');
    expect(inline.errors?.[0]).toEqual(expect.objectContaining({ message: 'p.name must not contain NUL characters' }));
    expect(await run('{ echo(text: "fine") }')).toEqual({ data: { echo: 'fine' }, errors: undefined });
  });
});
