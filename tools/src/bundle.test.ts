import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleIsFresh, bundlePath, inputsPath } from './bundle';

/** The launcher's guard: a bundle older than any file it was made from is never started. */
describe('bundleIsFresh', () => {
  let root: string;
  let entry: string;
  const at = (file: string, secondsAgo: number) => {
    const t = new Date(Date.now() - secondsAgo * 1000);
    utimesSync(file, t, t);
  };

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'halo-bundle-'));
    mkdirSync(join(root, 'svc/dist'), { recursive: true });
    entry = join(root, 'svc/dist/main.js');
    for (const f of ['svc/dist/main.js', 'svc/dist/domain.js']) writeFileSync(join(root, f), '');
    writeFileSync(inputsPath(entry), JSON.stringify(['svc/dist/main.js', 'svc/dist/domain.js']));
    writeFileSync(bundlePath(entry), '');
    for (const f of ['svc/dist/main.js', 'svc/dist/domain.js']) at(join(root, f), 60);
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('is fresh when built after every input', () => {
    expect(bundleIsFresh(entry, root)).toBe(true);
  });

  it('is stale once an input is rebuilt after it (tsc -b without the bundle step)', () => {
    at(join(root, 'svc/dist/domain.js'), -5);
    expect(bundleIsFresh(entry, root)).toBe(false);
  });

  it('is stale when an input is gone, the input list is missing or empty, or there is no bundle', () => {
    rmSync(join(root, 'svc/dist/domain.js'));
    expect(bundleIsFresh(entry, root)).toBe(false);
    writeFileSync(inputsPath(entry), '[]');
    expect(bundleIsFresh(entry, root)).toBe(false);
    rmSync(inputsPath(entry));
    expect(bundleIsFresh(entry, root)).toBe(false);
    writeFileSync(inputsPath(entry), JSON.stringify(['svc/dist/main.js']));
    expect(bundleIsFresh(entry, root)).toBe(true);
    rmSync(bundlePath(entry));
    expect(bundleIsFresh(entry, root)).toBe(false);
  });
});
