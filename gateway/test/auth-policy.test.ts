import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { buildASTSchema, parse } from 'graphql';
import { prepareSupergraph } from '../src/auth';

/** The policy is read from the committed supergraph, the same file the gateway serves. */
const committed = readFileSync(resolve(__dirname, '../supergraph.graphql'), 'utf8');

it('reads @authenticated coordinates from the composed supergraph', () => {
  const { policy } = prepareSupergraph(committed);
  expect(policy.fields.has('Mutation.createUser')).toBe(true);
  expect(policy.fields.has('Query.users')).toBe(false);
});

it('drops only the SECURITY purpose of the authenticated link, keeping the rest of the schema', () => {
  const { sdl } = prepareSupergraph(committed);
  expect(sdl).toMatch(/@link\(url: "https:\/\/specs\.apollo\.dev\/authenticated\/v0\.1"\)/);
  expect(sdl).toContain('for: EXECUTION');
  // Same types and fields as before.
  const before = buildASTSchema(parse(committed), { assumeValidSDL: true });
  const after = buildASTSchema(parse(sdl), { assumeValidSDL: true });
  expect(Object.keys(after.getTypeMap()).sort()).toEqual(Object.keys(before.getTypeMap()).sort());
});

it('leaves a supergraph without @authenticated and @requiresScopes untouched', () => {
  const plain = committed.replace(/@link\(url: "https:\/\/specs\.apollo\.dev\/(authenticated|requiresScopes)[^)]*\)\n?/g, '');
  expect(prepareSupergraph(plain).sdl).toBe(plain);
});
