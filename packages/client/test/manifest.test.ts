import { createHash } from 'node:crypto';
import { persistedQueryManifest, typed, type CreateApiKeyInput } from '../src';

/** The manifest an app registers: ids are the hashes the SDK sends, names and types read from each document. */
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

it('one entry per distinct document, hashed as given, with its name and type', async () => {
  const PRODUCT = typed<{ product: { name: string } }, { id: string }>('query Product($id: ID!) { product(id: $id) { name } }');
  const docs = [
    PRODUCT,
    'mutation Send { sendMessage(chatId: "a", text: "b") { id } }',
    '{ me { id } }',
    '# a comment\nsubscription { newMessage(chatId: "a") { id } }',
    PRODUCT,
  ];
  expect(await persistedQueryManifest(docs)).toEqual({
    format: 'apollo-persisted-query-manifest',
    version: 1,
    operations: [
      { id: sha256(PRODUCT), name: 'Product', type: 'query', body: PRODUCT },
      { id: sha256(docs[1]!), name: 'Send', type: 'mutation', body: docs[1] },
      { id: sha256(docs[2]!), name: '', type: 'query', body: docs[2] },
      { id: sha256(docs[3]!), name: '', type: 'subscription', body: docs[3] },
    ],
  });
});

it('whitespace is part of the id: the text registered must be the text the app sends', async () => {
  const [a, b] = (await persistedQueryManifest(['{ me { id } }', '{ me { id }}'])).operations;
  expect(a!.id).not.toBe(b!.id);
});

it('an API key for pushing one app’s manifest is typed: operations:write:<client>', () => {
  const input: CreateApiKeyInput = { name: 'shop CI', scopes: ['operations:write:shop', 'schema:read'] };
  expect(input.scopes).toContain('operations:write:shop');
});
