import { validateRestInput, type RestRoute } from '@halo/kit/rest';
import { labelled, messageOf } from '@halo/kit/testing';
import { apiKeyInput, loginInput, parseId, registration } from '../src/domain/rules';
import { restManifest } from '../src/rest/manifest';

/** The manifest's schemas answer what the domain answers, for every input (the same 400, or none). */

const route = (id: string) => restManifest.routes.find((r) => r.id === id)! as RestRoute;

const GOOD = { name: 'Budi', email: 'budi@example.com', password: 'password123' };

it.each(
  labelled([
    undefined,
    null,
    [],
    'x',
    {},
    GOOD,
    { ...GOOD, name: '  ' },
    { ...GOOD, name: 5 },
    { ...GOOD, name: 'x'.repeat(101) },
    { ...GOOD, name: ` ${'x'.repeat(100)} ` },
    { ...GOOD, email: undefined },
    { ...GOOD, email: '  ' },
    { ...GOOD, email: 'not-an-email' },
    { ...GOOD, email: ' Budi@Example.COM ' },
    { ...GOOD, password: undefined },
    { ...GOOD, password: '' },
    { ...GOOD, password: 'short' },
    { ...GOOD, password: '😀😀😀😀😀😀😀' },
    { ...GOOD, password: '😀😀😀😀😀😀😀😀' },
    { ...GOOD, password: 'x'.repeat(1025) },
    { ...GOOD, password: 12345678 },
    { name: '', email: 'bad', password: 'short' },
    { email: 'bad', password: 'short' },
  ]),
)('POST /auth/register %s', (_label, body) => {
  expect(messageOf(() => validateRestInput(route('register'), 1, { body }))).toBe(messageOf(() => registration(body)));
});

it.each(
  labelled([
    undefined,
    {},
    { email: 'a@b.example' },
    { email: 'a@b.example', password: '' },
    { email: ' ', password: 'x' },
    { email: 5, password: 'x' },
    { email: 'x', password: 'x' },
    { password: 'x' },
    { email: 'a@b.example', password: 1 },
  ]),
)('POST /auth/login %s', (_label, body) => {
  expect(messageOf(() => validateRestInput(route('login'), 1, { body }))).toBe(messageOf(() => loginInput(body)));
});

it.each(
  labelled([
    undefined,
    {},
    { name: 'ci' },
    { name: 'ci', scopes: [] },
    { name: 'ci', scopes: null },
    { name: 'ci', scopes: 'catalog:write' },
    { name: 'ci', scopes: ['catalog:write', 5] },
    { name: 'ci', scopes: ['catalog:write', 'nope'] },
    { name: 'ci', scopes: ['catalog:write', 'catalog:write'] },
    { name: ' ', scopes: ['nope'] },
    { name: 'x'.repeat(101), scopes: ['catalog:write'] },
    { scopes: ['catalog:write'] },
  ]),
)('POST /auth/api-keys %s', (_label, body) => {
  expect(messageOf(() => validateRestInput(route('createApiKey'), 1, { body }))).toBe(messageOf(() => apiKeyInput(body)));
});

it.each(['1', '0', '00', '007', 'abc', '-1', '1.5', '', '1234567890123456'])('DELETE /auth/api-keys/%s: ids as auth parses them', (id) => {
  expect(messageOf(() => validateRestInput(route('revokeApiKey'), 1, { params: { id } }))).toBe(messageOf(() => parseId(id)));
});
