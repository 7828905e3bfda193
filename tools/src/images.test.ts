import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './containers/podman';
import {
  buildArgs,
  dockerfileArgDefault,
  formatTable,
  IMAGES,
  parseArgs,
  pickCaBundle,
  selectImages,
  withoutCredentials,
  type BuildSettings,
} from './images';

/** `npm run images` without podman: its command line, image list, build arguments and table. */
describe('npm run images', () => {
  it('builds every process the chart ships, the gateway and each service folder', () => {
    const services = ['auth', 'content', 'catalog', 'payments', 'chat', 'registry'];
    expect(IMAGES).toEqual([{ name: 'gateway', app: 'gateway' }, ...services.map((name) => ({ name, app: `services/${name}` }))]);
    for (const { app } of IMAGES) expect(readFileSync(join(ROOT, app, 'package.json'), 'utf8')).toContain('"name"');
  });

  describe('parseArgs', () => {
    it('defaults to every image, tag local, the repository as context', () => {
      expect(parseArgs([], {}, '/somewhere')).toEqual({ only: [], tag: 'local', context: ROOT, help: false });
    });

    it('takes the tag from HALO_IMAGE_TAG unless --tag says otherwise', () => {
      expect(parseArgs([], { HALO_IMAGE_TAG: 'ci' }, ROOT).tag).toBe('ci');
      expect(parseArgs(['--tag', 'v2'], { HALO_IMAGE_TAG: 'ci' }, ROOT).tag).toBe('v2');
    });

    it('reads --only as a list, repeated or with =, and skips the `--` npm passes on', () => {
      const options = parseArgs(['--only', 'gateway,catalog', '--', '--only=chat', '--tag=x1', '--context', 'ctx'], {}, '/home/me');
      expect(options).toEqual({ only: ['gateway', 'catalog', 'chat'], tag: 'x1', context: '/home/me/ctx', help: false });
      expect(parseArgs(['--context', '/abs'], {}, '/home/me').context).toBe('/abs');
    });

    it('refuses unknown arguments, images and tags, and a flag without its value', () => {
      expect(() => parseArgs(['--onyl', 'gateway'], {}, ROOT)).toThrow('unknown argument --onyl');
      expect(() => parseArgs(['--only', 'gateway,billing'], {}, ROOT)).toThrow(/no image billing \(there are gateway, auth/);
      expect(() => parseArgs(['--tag', 'a:b'], {}, ROOT)).toThrow('a:b is not a valid image tag');
      expect(() => parseArgs(['--tag'], {}, ROOT)).toThrow('--tag needs a value');
      expect(() => parseArgs(['--only', '--tag', 'x'], {}, ROOT)).toThrow('--only needs a value');
    });

    it('knows --help', () => {
      expect(parseArgs(['--help'], {}, ROOT).help).toBe(true);
    });
  });

  it('selects images in build order, whatever order they are named in', () => {
    expect(selectImages(['chat', 'gateway']).map((i) => i.name)).toEqual(['gateway', 'chat']);
    expect(selectImages([])).toHaveLength(IMAGES.length);
  });

  describe('dockerfileArgDefault', () => {
    it("reads an ARG's default, quoted or not, and nothing from a comment or an ARG without one", () => {
      const text = [
        '# ARG NODE_IMAGE=commented',
        'ARG NODE_IMAGE=node:22@sha256:abc',
        'ARG APP',
        'ARG Q="quoted"',
        'ARG VERSION=0.0.0-dev',
      ].join('\n');
      expect(dockerfileArgDefault(text, 'NODE_IMAGE')).toBe('node:22@sha256:abc');
      expect(dockerfileArgDefault(text, 'Q')).toBe('quoted');
      expect(dockerfileArgDefault(text, 'APP')).toBeUndefined();
      expect(dockerfileArgDefault(text, 'MISSING')).toBeUndefined();
    });

    it("finds deploy/Dockerfile's base", () => {
      const text = readFileSync(join(ROOT, 'deploy/Dockerfile'), 'utf8');
      expect(dockerfileArgDefault(text, 'NODE_IMAGE')).toMatch(/^node:22-bookworm-slim@sha256:[0-9a-f]{64}$/);
    });
  });

  it('passes the build its base, APP, OCI labels (as build args and as labels) and the CA secret', () => {
    const settings: BuildSettings = {
      base: 'localhost/halo/node:22.23.3-bookworm',
      tag: 'local',
      context: ROOT,
      version: '0.1.0',
      revision: 'abc123',
      source: 'unknown',
      ca: '/etc/ca.pem',
    };
    const args = buildArgs({ name: 'content', app: 'services/content' }, settings);
    expect(args.slice(0, 5)).toEqual([
      'build',
      '-f',
      join(ROOT, 'deploy/Dockerfile'),
      '--ignorefile',
      join(ROOT, 'deploy/Dockerfile.dockerignore'),
    ]);
    const pairs = (flag: string) => args.flatMap((a, i) => (a === flag ? [args[i + 1]] : []));
    expect(pairs('--build-arg')).toEqual([
      'APP=services/content',
      'NODE_IMAGE=localhost/halo/node:22.23.3-bookworm',
      'VERSION=0.1.0',
      'REVISION=abc123',
      'SOURCE=unknown',
    ]);
    expect(pairs('--label')).toEqual([
      'org.opencontainers.image.version=0.1.0',
      'org.opencontainers.image.revision=abc123',
      'org.opencontainers.image.source=unknown',
    ]);
    expect(pairs('--secret')).toEqual(['id=ca,src=/etc/ca.pem']);
    expect(args.slice(-3)).toEqual(['-t', 'localhost/halo/content:local', ROOT]);
    expect(buildArgs({ name: 'gateway', app: 'gateway' }, { ...settings, ca: undefined })).not.toContain('--secret');
  });

  it("takes npm's cafile, else NODE_EXTRA_CA_CERTS, else the system bundle, whichever exists", () => {
    const system = '/etc/ssl/certs/ca-certificates.crt';
    const all = () => true;
    expect(pickCaBundle('/npm.pem', { NODE_EXTRA_CA_CERTS: '/extra.pem' }, all)).toBe('/npm.pem');
    expect(pickCaBundle('null', { NODE_EXTRA_CA_CERTS: '/extra.pem' }, all)).toBe('/extra.pem');
    expect(pickCaBundle('undefined', {}, all)).toBe(system);
    expect(pickCaBundle('/gone.pem', {}, (f) => f === system)).toBe(system);
    expect(pickCaBundle(undefined, {}, () => false)).toBeUndefined();
  });

  it('labels an image with a remote URL stripped of credentials', () => {
    expect(withoutCredentials('https://user:token@github.com/acme/halo.git')).toBe('https://github.com/acme/halo.git');
    expect(withoutCredentials('https://github.com/acme/halo.git')).toBe('https://github.com/acme/halo.git');
    expect(withoutCredentials('git@github.com:acme/halo.git')).toBe('git@github.com:acme/halo.git');
  });

  it('prints sizes in MB and seconds, a failed build as failed, and the total', () => {
    const table = formatTable(
      [
        { name: 'content', image: 'localhost/halo/content:local', bytes: 152_345_678, seconds: 95.04, ok: true },
        { name: 'chat', image: 'localhost/halo/chat:local', bytes: null, seconds: 3, ok: false },
      ],
      98.2,
    );
    expect(table.split('\n')).toEqual([
      'image                             MB  seconds',
      'localhost/halo/content:local   152.3     95.0',
      'localhost/halo/chat:local     failed      3.0',
      'total                                    98.2',
    ]);
  });
});
