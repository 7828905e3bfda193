import { startTestService, type TestService } from '@halo/kit/testing';
import { registryService, type RegistryService } from '../src/service';
import { call, contractOf, serviceToken } from './helpers';

/**
 * Takeovers (docs/registry.md, "Check report"): catalog taking over or reading a field content
 * owns (`User.email`, whose privacy rule lives in content). Clients see no change and usage says
 * nothing about whose data it is, so the check blocks until the publish says why (acknowledge).
 * Service tokens only: no API key is exchanged, auth's address is never called.
 */
let reg: TestService<RegistryService>;

beforeAll(async () => {
  reg = await startTestService(registryService, { AUTH_GRPC_ADDR: '127.0.0.1:1' });
});
afterAll(async () => reg?.close());

/** catalog's contract with `extra` appended to its SDL (which links federation v2). */
const catalogPlus = (extra: string) => {
  const c = contractOf('catalog');
  c.sdl = `${c.sdl}\n${extra}\n`;
  return c;
};
const overriding = () =>
  catalogPlus(`type User @key(fields: "id") {
  id: ID!
  email: String! @federation__override(from: "content")
}`);
const requiring = () =>
  catalogPlus(`type User @key(fields: "id") {
  id: ID!
  email: String! @federation__external
  emailDomain: String @federation__requires(fields: "email")
}`);

const check = async (contract: unknown) => (await call(reg.base, 'POST', '/v1/check', { contract }, await serviceToken('catalog'))).body;
const publish = async (contract: unknown, acknowledge?: string) =>
  call(reg.base, 'POST', '/v1/publish', { contract, ...(acknowledge ? { acknowledge } : {}) }, await serviceToken('catalog'));
const latest = async () =>
  (await call(reg.base, 'GET', '/v1/services/catalog/versions', undefined, await serviceToken('gateway'))).body.versions[0];

it('the fields it takes are content’s (the real SDLs): User.email is content’s, not catalog’s', () => {
  expect(contractOf('content').sdl).toMatch(/type User @key\(fields: "id"\) \{[^}]*\n\s*email: String!/);
  expect(contractOf('catalog').sdl).not.toMatch(/type User\b/);
});

describe('@override(from: "content")', () => {
  it('the check: not ok, FIELD_OVERRIDE_ADDED naming content, and a note asking for an acknowledgement', async () => {
    const res = await check(overriding());
    expect(res.report.composition).toEqual({ ok: true, errors: [] });
    expect(res.ok).toBe(false);
    expect(res.report.changes).toEqual(
      expect.arrayContaining([
        {
          type: 'FIELD_OVERRIDE_ADDED',
          path: 'User.email',
          message: 'catalog takes over User.email from content (@override)',
          breaking: true,
          acknowledged: false,
          usage: { count: 0, operations: [] },
        },
        expect.objectContaining({ type: 'ENTITY_EXTENDED_ADDED', path: 'User', message: expect.stringContaining('content') }),
      ]),
    );
    expect(res.report.notes).toContain(
      'User.email: catalog takes over User.email from content (@override); it needs an acknowledgement naming why (--acknowledge)',
    );
  });

  it('published without an acknowledgement: 422; with one: 201, and the version records it acknowledged', async () => {
    const refused = await publish(overriding());
    expect(refused.status).toBe(422);
    expect(refused.body.report.ok).toBe(false);

    const res = await publish(overriding(), 'content agreed: catalog sends the order emails (#data-owners)');
    expect(res.status).toBe(201);
    const version = await latest();
    expect(version).toMatchObject({
      version: res.body.version,
      acknowledgement: 'content agreed: catalog sends the order emails (#data-owners)',
    });
    expect(version.changes).toEqual(
      expect.arrayContaining([
        { type: 'FIELD_OVERRIDE_ADDED', path: 'User.email', message: expect.any(String), breaking: true, acknowledged: true },
        expect.objectContaining({ type: 'ENTITY_EXTENDED_ADDED', path: 'User', acknowledged: true }),
      ]),
    );
    const { rows } = await reg.db.query<{ type: string; path: string; version: number }>(
      "SELECT type, path, version FROM acknowledgements WHERE type = 'FIELD_OVERRIDE_ADDED'",
    );
    expect(rows).toEqual([{ type: 'FIELD_OVERRIDE_ADDED', path: 'User.email', version: res.body.version }]);
  });

  it('republished beside another change, the override already there is not reported again', async () => {
    const c = overriding();
    c.sdl = c.sdl!.replace(/(type Product @key[^{]*\{)/, '$1\n  sku: String');
    const res = await check(c);
    expect(res.ok).toBe(true);
    expect(res.report.changes.map((x: { type: string; path: string }) => [x.type, x.path])).toEqual([['FIELD_ADDED', 'Product.sku']]);
  });
});

describe('@requires(fields: "email")', () => {
  it('the check: not ok, REQUIRES_FOREIGN_FIELD_ADDED at User.email naming content; 422, then 201 acknowledged', async () => {
    const res = await check(requiring());
    expect(res.report.composition).toEqual({ ok: true, errors: [] });
    expect(res.ok).toBe(false);
    expect(res.report.changes).toContainEqual(
      expect.objectContaining({
        type: 'REQUIRES_FOREIGN_FIELD_ADDED',
        path: 'User.email',
        message: "catalog reads content's User.email (@requires on User.emailDomain)",
        breaking: true,
        acknowledged: false,
      }),
    );
    expect(res.report.notes).toContain(
      "User.email: catalog reads content's User.email (@requires on User.emailDomain); it needs an acknowledgement naming why (--acknowledge)",
    );

    expect((await publish(requiring())).status).toBe(422);
    const published = await publish(requiring(), 'order emails need the domain; content agreed');
    expect(published.status).toBe(201);
    expect((await latest()).changes).toContainEqual({
      type: 'REQUIRES_FOREIGN_FIELD_ADDED',
      path: 'User.email',
      message: expect.any(String),
      breaking: true,
      acknowledged: true,
    });
  });
});
