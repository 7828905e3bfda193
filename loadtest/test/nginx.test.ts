import { nginxConfig } from '../src/peers/nginx';

describe('the nginx reference config (src/peers/nginx.ts)', () => {
  const conf = nginxConfig({ dir: '/tmp/bench-x/nginx', port: 5189, upstream: 'http://127.0.0.1:4102' });

  it('runs one worker in the foreground, proxying to the service over a keep-alive pool', () => {
    expect(conf).toMatch(/^worker_processes 1;$/m);
    expect(conf).toMatch(/^daemon off;$/m);
    expect(conf).toMatch(/server 127\.0\.0\.1:4102;\s+keepalive \d+;/);
    expect(conf).toContain('listen 127.0.0.1:5189;');
    // nginx keeps upstream connections alive only over HTTP/1.1 without a Connection header.
    expect(conf).toContain('proxy_http_version 1.1;');
    expect(conf).toContain('proxy_set_header Connection "";');
  });

  it('writes its pid, logs and temp files under its own directory only', () => {
    const paths = [...conf.matchAll(/\s(\/[^\s;]+)/g)].map((m) => m[1]!);
    expect(paths.length).toBeGreaterThanOrEqual(8);
    for (const path of paths) expect(path.startsWith('/tmp/bench-x/nginx/')).toBe(true);
  });
});
