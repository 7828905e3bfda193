import { z } from 'zod';
import { badRequest } from '../errors/errors';
import { composeRouteTable, defineRestManifest, ruleParsed, validateRestInput, type RestManifest } from './rest-manifest';
import { internalOpenApi, restOpenApi, serviceOpenApi } from './rest-openapi';

/** An internal service's manifest (`internal: true`, the registry's): mounted and documented, never on the edge. */

const positive = (raw: unknown): number => {
  if (typeof raw !== 'number' || raw < 1) throw badRequest('n must be a number from 1');
  return raw;
};

const internal = defineRestManifest({
  service: 'registry',
  internal: true,
  description: 'internal',
  routes: [
    {
      id: 'makeThing',
      method: 'POST',
      path: '/v1/things',
      summary: 'Make a thing',
      body: ruleParsed((raw) => ({ n: positive((raw as { n?: unknown } | null)?.n) }), z.object({ n: z.number().int().min(1) })),
      responses: { 201: { description: 'Made (no Location: an internal API is not held to the edge’s conventions)' } },
    },
  ],
});
const info = { title: 'Internal', version: '1', contact: { name: 'x' }, license: { name: 'Apache License 2.0', identifier: 'Apache-2.0' } };
const security = { schemes: { token: { type: 'apiKey', in: 'header', name: 'x-token' } }, access: 'Needs a token.' };

it('internal is for, and only for, a service the gateway does not route to', () => {
  expect(() => defineRestManifest({ service: 'registry', description: '', routes: [] })).toThrow(/internal: true/);
  expect(() => defineRestManifest({ service: 'catalog', internal: true, description: '', routes: [] })).toThrow(/internal: true/);
});

it('is never composed into the gateway’s route table nor its public document', () => {
  expect(() => composeRouteTable([internal])).toThrow(/never composed/);
  expect(() => serviceOpenApi(internal)).toThrow(/never part of the public OpenAPI document/);
  expect(() => restOpenApi([internal as RestManifest], info)).toThrow(/never part/);
});

it('a rule-parsed body: the rule’s 400, the handler gets what the rule returns; the document shows the wire schema', () => {
  const route = internal.routes[0];
  expect(validateRestInput(route, 1, { body: { n: 3 } }).body).toEqual({ n: 3 });
  expect(() => validateRestInput(route, 1, { body: null })).toThrow('n must be a number from 1');
  const doc = internalOpenApi(internal, info, security) as any;
  const op = doc.paths['/v1/things'].post;
  expect(op.requestBody.content['application/json'].schema).toEqual({
    type: 'object',
    properties: { n: { type: 'integer', minimum: 1 } },
    required: ['n'],
  });
  expect(op.security).toEqual([{ token: [] }]);
  expect(op.description).toBe('Needs a token.');
  expect(Object.keys(op.responses)).toEqual(['201', '400']);
  expect(Object.keys(op.responses['201'].headers)).toEqual(['X-Request-Id']);
  expect(doc.components.securitySchemes).toEqual(security.schemes);
});
