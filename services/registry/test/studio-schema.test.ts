import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { schemaModel } from '../src/studio/schema-model';

/** The schema explorer's model of the committed supergraph: what a team reads about each field. */
const types = schemaModel(readFileSync(resolve(__dirname, '../../../gateway/supergraph.graphql'), 'utf8'));
const type = (name: string) => types.find((t) => t.name === name)!;
const field = (t: string, f: string) => type(t).fields.find((x) => x.name === f)!;

it('lists the API schema only, root types first: no join or link machinery', () => {
  expect(types.slice(0, 3).map((t) => t.name)).toEqual(['Query', 'Mutation', 'Subscription']);
  expect(types.some((t) => t.name.startsWith('join__') || t.name.startsWith('link__'))).toBe(false);
});

it("names each field's owning services, an entity's fields each their own", () => {
  expect(field('Query', 'products').owners).toEqual(['catalog']);
  expect(type('User').owners.length).toBeGreaterThan(1);
  expect(field('User', 'email').owners).toEqual(['content']);
});

it('reads access, cost and arguments as the supergraph declares them', () => {
  expect(field('Mutation', 'createProduct')).toMatchObject({ authenticated: true, scopes: [['catalog:write']] });
  expect(field('Query', 'products').cost).toBe(2);
  expect(field('Query', 'products').args.map((a) => a.name)).toContain('limit');
  expect(type('ProductSort').kind).toBe('enum');
  expect(type('ProductSort').fields.map((f) => f.name)).toContain('PRICE');
});
