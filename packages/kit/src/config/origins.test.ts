import { effectiveOrigins, OriginList } from './origins';

describe('OriginList', () => {
  it('matches exact origins, whatever the case and a trailing slash in the entry', () => {
    const list = OriginList.parse(' https://App.Example.com , http://localhost:5173/ ');
    expect(list.entries).toEqual(['https://app.example.com', 'http://localhost:5173']);
    expect(list.allows('https://app.example.com')).toBe(true);
    expect(list.allows('https://APP.example.com')).toBe(true);
    expect(list.allows('http://localhost:5173')).toBe(true);
    expect(list.allows('http://app.example.com')).toBe(false);
    expect(list.allows('https://app.example.com:8443')).toBe(false);
    expect(list.allows('http://localhost:5174')).toBe(false);
  });

  it('matches a wildcard port, the default one included', () => {
    const list = OriginList.parse('http://localhost:*');
    expect(list.allows('http://localhost:5173')).toBe(true);
    expect(list.allows('http://localhost')).toBe(true);
    expect(list.allows('https://localhost:5173')).toBe(false);
    expect(list.allows('http://localhost.evil.example:5173')).toBe(false);
  });

  it('matches any subdomain of a wildcard host, never the apex or a look-alike', () => {
    const list = OriginList.parse('https://*.example.com');
    expect(list.allows('https://app.example.com')).toBe(true);
    expect(list.allows('https://a.b.example.com')).toBe(true);
    expect(list.allows('https://example.com')).toBe(false);
    expect(list.allows('https://evilexample.com')).toBe(false);
    expect(list.allows('https://app.example.com.evil.net')).toBe(false);
    expect(list.allows('https://app.example.com:8443')).toBe(false);
    expect(list.allows('http://app.example.com')).toBe(false);
  });

  it.each(['null', 'https://app.example.com/', 'https://app.example.com/x', 'https://u@app.example.com', '', 'garbage'])(
    'never allows the Origin %j',
    (origin) => {
      expect(OriginList.parse('https://*.example.com,http://localhost:*,https://app.example.com').allows(origin)).toBe(false);
    },
  );

  it.each([
    '*',
    'app.example.com',
    'https://app.example.com/path',
    'ftp://x.example',
    'https://*',
    'http://*:*',
    'https://a.*.com',
    'https://*.com',
    'http://x:99999',
  ])('refuses the entry %j', (entry) => {
    expect(() => OriginList.parse(entry)).toThrow(/is not an origin like https:\/\/app\.example\.com or a pattern/);
  });

  it('defaults to loopback on any port in development and to none otherwise', () => {
    const dev = effectiveOrigins(undefined, 'development');
    expect(dev.allows('http://localhost:5173')).toBe(true);
    expect(dev.allows('http://127.0.0.1:8080')).toBe(true);
    expect(dev.allows('https://app.example.com')).toBe(false);
    expect(effectiveOrigins(undefined, 'production').empty).toBe(true);
    expect(effectiveOrigins(OriginList.parse(''), 'development').empty).toBe(true);
  });
});
