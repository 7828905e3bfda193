import { parseId } from '@halo/kit/domain';
import { validateRestInput, type RestRoute } from '@halo/kit/rest';
import { messageOf } from '@halo/kit/testing';
import { greeting } from '../src/domain/rules';
import { restManifest } from '../src/rest/manifest';

/** The manifest's schemas answer what the domain answers, for every input (the same 400, or none). */

const route = (id: string) => restManifest.routes.find((r) => r.id === id)! as RestRoute;

it.each(
  [
    undefined,
    null,
    'Budi',
    42,
    [],
    ['Budi'],
    {},
    { name: 'Budi' },
    { name: ' Budi ' },
    { name: '' },
    { name: '   ' },
    { name: 5 },
    { name: null },
    { name: ['Budi'] },
    { other: 'x' },
  ].map((b) => [JSON.stringify(b) ?? 'undefined', b]),
)('POST /greet %s', (_label, body) => {
  const name = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as { name?: unknown }).name : undefined;
  expect(messageOf(() => validateRestInput(route('greet'), 1, { body }))).toBe(messageOf(() => greeting(name)));
});

it.each(['1', '0', '007', 'abc', '-1', '1.5', '1e3', '', ' 1', '1234567890123456'])('ids as the kit parses them: %j', (id) => {
  const kit = messageOf(() => parseId(id));
  expect(messageOf(() => validateRestInput(route('postsOfUser'), 1, { params: { userId: id } }))).toBe(kit);
  for (const r of ['getPost', 'commentsOfPost']) expect(messageOf(() => validateRestInput(route(r), 1, { params: { id } }))).toBe(kit);
});
