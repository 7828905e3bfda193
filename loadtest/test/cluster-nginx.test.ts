import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clusterNginxConfig } from '../src/cluster-nginx';
import { findNginx } from '../src/peers/nginx';

describe("bench:cluster's nginx config (src/cluster-nginx.ts)", () => {
  const upstreams = [
    { name: 'front', port: 5580, servers: ['http://127.0.0.1:4600', 'http://127.0.0.1:5579'] },
    { name: 'chat', port: 5585, servers: ['http://127.0.0.1:4605', 'http://127.0.0.1:40123'] },
  ];
  const conf = clusterNginxConfig('/tmp/cluster-x/nginx', upstreams);

  it('lists every server of an upstream and listens for it on its own port', () => {
    expect(conf).toMatch(/upstream front \{\s+server 127\.0\.0\.1:4600 [^;]*;\s+server 127\.0\.0\.1:5579 [^;]*;\s+keepalive \d+;/);
    expect(conf).toMatch(/upstream chat \{\s+server 127\.0\.0\.1:4605 [^;]*;\s+server 127\.0\.0\.1:40123 [^;]*;/);
    expect(conf).toContain('listen 127.0.0.1:5580;');
    expect(conf).toContain('listen 127.0.0.1:5585;');
  });

  it('passes WebSocket upgrades and keeps other upstream connections alive', () => {
    expect(conf).toMatch(/map \$http_upgrade \$connection_upgrade \{\s+default upgrade;\s+'' '';\s+\}/);
    expect(conf).toContain('proxy_set_header Connection $connection_upgrade;');
    expect(conf).toContain('proxy_http_version 1.1;');
  });

  it('writes its pid, logs and temp files under its own directory only', () => {
    const paths = [...conf.matchAll(/\s(\/[^\s;]+)/g)].map((m) => m[1]!);
    expect(paths.length).toBeGreaterThanOrEqual(7);
    for (const path of paths) expect(path.startsWith('/tmp/cluster-x/nginx/')).toBe(true);
  });

  // Skipped where nginx is not installed (the benches that run it say so in one line): CI installs it.
  const nginx = findNginx();
  (nginx ? it : it.skip)('is a config nginx accepts (nginx -t)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cluster-nginx-'));
    try {
      const file = join(dir, 'nginx.conf');
      writeFileSync(file, clusterNginxConfig(dir, upstreams));
      const r = spawnSync(nginx!, ['-t', '-p', dir, '-e', join(dir, 'error.log'), '-c', file], { encoding: 'utf8' });
      expect(r.stderr).toContain('syntax is ok');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
