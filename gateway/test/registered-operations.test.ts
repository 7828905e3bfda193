import { createLogger } from '@halo/kit/logging';
import { sha256 } from '../src/graphql/persisted';
import { parseActiveOperations, RegisteredOperations, type PersistedMode, type RegisteredLabels } from '../src/graphql/registered';

/**
 * How one operation is judged against the registered lists (the pure part of
 * src/graphql/registered.ts); e2e/registered-operations.test.ts runs the same through a running
 * system, on every transport, with lists pushed to the real registry.
 */
const WEB_QUERY = 'query Products { products { data { id } } }';
const SHARED_QUERY = '{ __typename }';
const OTHER_QUERY = '{ products { data { name } } }';
const web = { name: 'web', version: '1.4.0' };

function registeredFor(mode: PersistedMode, counted: RegisteredLabels[] = []) {
  const registered = new RegisteredOperations({
    mode,
    allowClients: ['admin-tool'],
    shared: new Map([[sha256(SHARED_QUERY), SHARED_QUERY]]),
    logger: createLogger('test', 'silent'),
    count: (labels) => counted.push(labels),
  });
  registered.replace([{ id: sha256(WEB_QUERY), body: WEB_QUERY, client: 'web', version: '1.4.0' }]);
  return registered;
}
const apq = (query: string) => ({ persistedQuery: { version: 1, sha256Hash: sha256(query) } });
const codeOf = (r: ReturnType<RegisteredOperations['resolve']>) => ('refused' in r ? r.refused.extensions.code : 'ran');

describe('a registered operation sent by id', () => {
  it.each([
    ['the APQ extension', { extensions: apq(WEB_QUERY) }],
    ['documentId', { documentId: sha256(WEB_QUERY) }],
    ['doc_id, sha256:-prefixed', { doc_id: `sha256:${sha256(WEB_QUERY)}` }],
  ])('by %s: its text from the list, the ids gone', (_t, sent) => {
    const r = registeredFor('enforce').resolve({ ...sent, variables: { a: 1 } }, web);
    expect(r).toEqual({ op: { query: WEB_QUERY, variables: { a: 1 } }, registered: true });
  });

  it('pushed under its tooling’s own id (Relay, a manifest): by that id, by its hash, or in full', () => {
    const registered = registeredFor('enforce');
    registered.replace([{ id: 'q1', body: OTHER_QUERY, client: 'ios', version: '2.0.0' }]);
    const ios = { name: 'ios', version: '2.0.0' };
    const expected = { op: { query: OTHER_QUERY }, registered: true };
    expect(registered.resolve({ doc_id: 'q1' }, ios)).toEqual(expected);
    expect(registered.resolve({ extensions: apq(OTHER_QUERY) }, ios)).toEqual(expected);
    expect(registered.resolve({ query: OTHER_QUERY }, ios)).toEqual({ op: { query: OTHER_QUERY }, registered: true });
    expect(codeOf(registered.resolve({ doc_id: 'Q1' }, ios))).toBe('PERSISTED_QUERY_NOT_FOUND');
    expect(registered.size).toEqual({ registry: 1, shared: 1 });
  });

  it('keeps the extensions the client sent besides the id', () => {
    const r = registeredFor('audit').resolve({ extensions: { ...apq(WEB_QUERY), tracing: true } }, web);
    expect(r).toEqual({ op: { query: WEB_QUERY, extensions: { tracing: true } }, registered: true });
  });

  it('with a text that is not the registered one: 400 PERSISTED_QUERY_HASH_MISMATCH', () => {
    expect(codeOf(registeredFor('enforce').resolve({ documentId: sha256(WEB_QUERY), query: OTHER_QUERY }, web))).toBe(
      'PERSISTED_QUERY_HASH_MISMATCH',
    );
  });
});

describe('enforce', () => {
  it('refuses what the client did not register, by id (NOT_FOUND) or in full (NOT_IN_LIST), naming the client', () => {
    const registered = registeredFor('enforce');
    const byId = registered.resolve({ extensions: apq(OTHER_QUERY) }, web);
    const inFull = registered.resolve({ query: OTHER_QUERY, extensions: apq(OTHER_QUERY) }, web);
    expect(codeOf(byId)).toBe('PERSISTED_QUERY_NOT_FOUND');
    expect(codeOf(inFull)).toBe('PERSISTED_QUERY_NOT_IN_LIST');
    expect('refused' in inFull && inFull.refused.message).toBe('Operation not registered for client "web" (version 1.4.0)');
    expect('refused' in inFull && inFull.refused.extensions.http).toEqual({ status: 400 });
  });

  it("one client's list is not another's; the shared file is every client's", () => {
    const registered = registeredFor('enforce');
    expect(codeOf(registered.resolve({ query: WEB_QUERY }, { name: 'ios', version: '2.0.0' }))).toBe('PERSISTED_QUERY_NOT_IN_LIST');
    const unnamed = registered.resolve({ query: WEB_QUERY }, { name: 'unknown', version: '' });
    expect('refused' in unnamed && unnamed.refused.message).toBe(
      'Operation not registered for this client (it sent no apollographql-client-name)',
    );
    expect(registered.resolve({ query: SHARED_QUERY }, { name: 'ios', version: '' })).toEqual({
      op: { query: SHARED_QUERY },
      registered: true,
    });
  });

  it('an allow-listed client sends free-form operations and registers APQ hashes as before', () => {
    const admin = { name: 'admin-tool', version: '' };
    const sent = { query: OTHER_QUERY, extensions: apq(OTHER_QUERY) };
    expect(registeredFor('enforce').resolve(sent, admin)).toEqual({ op: sent, registered: false });
    const lookup = { extensions: apq(OTHER_QUERY) };
    expect(registeredFor('enforce').resolve(lookup, admin)).toEqual({ op: lookup, registered: false });
  });

  it('an unknown documentId is NOT_FOUND in every mode (only lists hold document ids)', () => {
    expect(codeOf(registeredFor('audit').resolve({ documentId: sha256(OTHER_QUERY) }, web))).toBe('PERSISTED_QUERY_NOT_FOUND');
  });
});

describe('audit', () => {
  it('serves what is not registered, counted by the client and version the lists know', () => {
    const counted: RegisteredLabels[] = [];
    const registered = registeredFor('audit', counted);
    expect(registered.resolve({ query: OTHER_QUERY }, web)).toEqual({ op: { query: OTHER_QUERY }, registered: false });
    registered.resolve({ query: WEB_QUERY }, web);
    registered.resolve({ query: OTHER_QUERY }, { name: 'web', version: '9.9.9' });
    registered.resolve({ query: OTHER_QUERY }, { name: 'anything-a-client-says', version: '' });
    expect(counted).toEqual([
      { client: 'web', version: '1.4.0', registered: 'false' },
      { client: 'web', version: '1.4.0', registered: 'true' },
      { client: 'web', version: 'other', registered: 'false' },
      { client: 'other', version: 'none', registered: 'false' },
    ]);
  });
});

describe('new lists replace the old whole', () => {
  it('a retired version’s operations stop being registered', () => {
    const registered = registeredFor('enforce');
    registered.replace([]);
    expect(codeOf(registered.resolve({ query: WEB_QUERY }, web))).toBe('PERSISTED_QUERY_NOT_IN_LIST');
    expect(registered.size).toEqual({ registry: 0, shared: 1 });
  });
});

describe('parseActiveOperations', () => {
  it('reads the feed; refuses an answer that is not one (the poller keeps the last good lists)', () => {
    const op = { id: sha256(WEB_QUERY), body: WEB_QUERY, client: 'web', version: '1.4.0' };
    expect(parseActiveOperations({ operations: [op] })).toEqual([op]);
    expect(() => parseActiveOperations({})).toThrow('no operations array');
    expect(() => parseActiveOperations({ operations: [{ ...op, id: '' }] })).toThrow('operations[0] is not {id, body, client, version}');
  });
});
