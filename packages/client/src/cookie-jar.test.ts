import { MemoryCookieJar, setCookiesOf } from './cookie-jar.js';

const REFRESH = 'refresh_token=abc; HttpOnly; Secure; SameSite=Strict; Path=/auth; Max-Age=2592000';

describe('MemoryCookieJar', () => {
  it("sends auth's refresh cookie to /auth/* only", () => {
    const jar = new MemoryCookieJar();
    jar.store('http://127.0.0.1:4000/auth/login', [REFRESH]);
    expect(jar.header('http://127.0.0.1:4000/auth/refresh')).toBe('refresh_token=abc');
    expect(jar.header('http://127.0.0.1:4000/auth/logout')).toBe('refresh_token=abc');
    expect(jar.header('http://127.0.0.1:4000/auth')).toBe('refresh_token=abc');
    expect(jar.header('http://127.0.0.1:4000/profile')).toBeNull();
    expect(jar.header('http://127.0.0.1:4000/authx')).toBeNull();
    expect(jar.header('http://127.0.0.1:4000/graphql')).toBeNull();
  });

  it('sends a Secure cookie over https and to loopback hosts (as browsers do), never over plain http elsewhere', () => {
    const jar = new MemoryCookieJar();
    jar.store('http://localhost:4000/auth/login', [REFRESH]);
    expect(jar.header('http://localhost:4000/auth/refresh')).toBe('refresh_token=abc');
    jar.store('https://api.example.com/auth/login', [REFRESH]);
    expect(jar.header('https://api.example.com/auth/refresh')).toBe('refresh_token=abc');
    expect(jar.header('http://api.example.com/auth/refresh')).toBeNull();
  });

  it('keeps host-only cookies to their host; Domain cookies to the domain and its subdomains', () => {
    const jar = new MemoryCookieJar();
    jar.store('https://api.example.com/auth/login', ['a=1; Path=/', 'b=2; Domain=example.com; Path=/', 'c=3; Domain=other.com; Path=/']);
    expect(jar.header('https://api.example.com/x')).toBe('a=1; b=2');
    expect(jar.header('https://www.example.com/x')).toBe('b=2');
    expect(jar.header('https://other.com/x')).toBeNull();
  });

  it('replaces a cookie on rotation and forgets it on Max-Age=0 (logout)', () => {
    const jar = new MemoryCookieJar();
    jar.store('http://127.0.0.1/auth/login', [REFRESH]);
    jar.store('http://127.0.0.1/auth/refresh', [REFRESH.replace('abc', 'def')]);
    expect(jar.header('http://127.0.0.1/auth/refresh')).toBe('refresh_token=def');
    jar.store('http://127.0.0.1/auth/logout', ['refresh_token=; HttpOnly; Secure; SameSite=Strict; Path=/auth; Max-Age=0']);
    expect(jar.header('http://127.0.0.1/auth/refresh')).toBeNull();
  });

  it('expires cookies by Max-Age and Expires on its clock', () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const jar = new MemoryCookieJar(() => now);
    jar.store('http://127.0.0.1/', ['a=1; Max-Age=60', 'b=2; Expires=Thu, 01 Jan 2026 00:00:30 GMT', 'c=3']);
    expect(jar.header('http://127.0.0.1/')).toBe('a=1; b=2; c=3');
    now += 31_000;
    expect(jar.header('http://127.0.0.1/')).toBe('a=1; c=3');
    now += 30_000;
    expect(jar.header('http://127.0.0.1/')).toBe('c=3');
  });

  it('defaults Path to the directory of the request, and orders longer paths first', () => {
    const jar = new MemoryCookieJar();
    jar.store('http://127.0.0.1/auth/login', ['d=1']);
    jar.store('http://127.0.0.1/', ['r=0; Path=/']);
    expect(jar.header('http://127.0.0.1/auth/refresh')).toBe('d=1; r=0');
    expect(jar.header('http://127.0.0.1/hello')).toBe('r=0');
  });

  it('ignores malformed Set-Cookie values', () => {
    const jar = new MemoryCookieJar();
    jar.store('http://127.0.0.1/', ['', '=novalue', 'noequals']);
    expect(jar.header('http://127.0.0.1/')).toBeNull();
  });
});

describe('setCookiesOf', () => {
  it('reads every Set-Cookie of an answer', () => {
    const h = new Headers();
    h.append('set-cookie', 'a=1; Path=/');
    h.append('set-cookie', 'b=2; Expires=Wed, 21 Oct 2026 07:28:00 GMT');
    expect(setCookiesOf(h)).toEqual(['a=1; Path=/', 'b=2; Expires=Wed, 21 Oct 2026 07:28:00 GMT']);
  });
  it('splits a joined header where getSetCookie is missing', () => {
    const h = { get: () => 'a=1; Path=/, b=2; Expires=Wed, 21 Oct 2026 07:28:00 GMT' } as unknown as Headers;
    expect(setCookiesOf(h)).toEqual(['a=1; Path=/', 'b=2; Expires=Wed, 21 Oct 2026 07:28:00 GMT']);
  });
});
