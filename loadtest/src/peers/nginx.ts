import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ExtraProcess } from '../gateways-bench';
import { descendants } from '../pin';

/**
 * nginx as the REST proxy to compare with (issue 30): Debian's nginx, one worker, a keep-alive
 * upstream pool to the service, run from a config generated into a temp dir (its own pid, logs
 * and temp paths; nothing under /etc or /var). Not a dependency of Halo: a bench finds it on
 * PATH (or in /usr/sbin) or skips the row with one line saying what to install.
 */
export const NGINX_MISSING = 'nginx not found: the REST rows skip nginx (install it with `apt-get install -y nginx`)';

/** The nginx binary, or null when there is none. */
export function findNginx(): string | null {
  for (const bin of ['nginx', '/usr/sbin/nginx']) {
    if (spawnSync(bin, ['-v'], { stdio: 'ignore' }).status === 0) return bin;
  }
  return null;
}

/**
 * What every config generated here starts with: one worker in the foreground, its pid, error log
 * and temp files under `dir` (nothing under /etc or /var). The `http` block's content follows it.
 */
export function nginxHead(dir: string, workerConnections = 1024): string {
  return `worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections ${workerConnections}; }
http {
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
`;
}

/** Writes `config` to `<dir>/nginx.conf` and runs nginx on it, its output in `<logDir>/nginx.log`. */
export function spawnNginx(bin: string, dir: string, config: string, logDir: string): { child: ChildProcess; conf: string } {
  mkdirSync(dir, { recursive: true });
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, config);
  const fd = openSync(join(logDir, 'nginx.log'), 'w');
  // -e: the error log before the config is read (otherwise /var/log/nginx/error.log); -p: the prefix.
  const child = spawn(bin, ['-p', dir, '-e', join(dir, 'error.log'), '-c', conf], { stdio: ['ignore', fd, fd] });
  closeSync(fd);
  return { child, conf };
}

/**
 * The whole config: one worker, `upstream` with `keepalive` (HTTP/1.1 and an empty Connection
 * header to the service, as nginx's docs require for it), an access log per request as the
 * gateway writes one, the client's Host and an X-Forwarded-For as the gateway sends them.
 */
export function nginxConfig(opts: { dir: string; port: number; upstream: string }): string {
  const upstream = new URL(opts.upstream);
  return `${nginxHead(opts.dir)}  access_log ${opts.dir}/access.log;
  upstream service {
    server ${upstream.hostname}:${upstream.port};
    keepalive 64;
  }
  server {
    listen 127.0.0.1:${opts.port};
    location / {
      proxy_pass http://service;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_set_header X-Forwarded-Proto $scheme;
    }
  }
}
`;
}

export interface NginxPeer extends ExtraProcess {
  /** The worker: the process that serves, whose CPU a request costs (the master only supervises). */
  workerPid(): number;
}

/** Starts nginx in the foreground (its master; the worker is its only child), logging into `dir`. */
export function startNginx(bin: string, opts: { dir: string; port: number; upstream: string; logDir: string }): NginxPeer {
  const { child } = spawnNginx(bin, opts.dir, nginxConfig(opts), opts.logDir);
  return {
    name: 'nginx',
    url: `http://127.0.0.1:${opts.port}`,
    child,
    workerPid() {
      const workers = descendants(child.pid!);
      if (workers.length !== 1) throw new Error(`nginx (pid ${child.pid}) has ${workers.length} workers, not 1`);
      return workers[0]!;
    },
  };
}

/** `startNginx` when nginx is installed; else one line through `log` saying what to install, and undefined. */
export function nginxIfInstalled(opts: {
  dir: string;
  port: number;
  upstream: string;
  logDir: string;
  log?: ((line: string) => void) | undefined;
}): NginxPeer | undefined {
  const bin = findNginx();
  if (bin === null) {
    opts.log?.(`bench: ${NGINX_MISSING}`);
    return undefined;
  }
  return startNginx(bin, opts);
}
