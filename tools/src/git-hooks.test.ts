import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * The commit-msg hook as git runs it (.githooks/commit-msg, reading tools/dist/commit-subject.js:
 * `npm run build` first), and its installer, the end of the root `prepare` script
 * (tools/bin/git-hooks.js), in throwaway repositories. commit-subject.test.ts holds the rule.
 */
const ROOT = resolve(__dirname, '../..');
const HOOK = join(ROOT, '.githooks', 'commit-msg');
const INSTALLER = join(ROOT, 'tools', 'bin', 'git-hooks.js');

/** Neither the caller's git config nor a hook's GIT_DIR reach these repositories; CI unset. */
const env: NodeJS.ProcessEnv = { ...process.env, CI: '', GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' };
for (const name of ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_COMMON_DIR']) delete env[name];
const run = (cmd: string, args: string[], cwd: string, extra: NodeJS.ProcessEnv = {}): SpawnSyncReturns<string> =>
  spawnSync(cmd, args, { cwd, encoding: 'utf8', env: { ...env, ...extra } });
const git = (cwd: string, ...args: string[]) => run('git', ['-c', 'user.name=t', '-c', 'user.email=t@halo.local', ...args], cwd);

let dir: string;
beforeEach(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'halo-hooks-')));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('.githooks/commit-msg', () => {
  it('refuses a message file whose subject breaks the rule, in one line, and passes one that keeps it', () => {
    writeFileSync(join(dir, 'bad'), 'Catalog: Add a thing.\n\n# Please enter the commit message\n');
    const refused = run(HOOK, [join(dir, 'bad')], ROOT);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/^commit-msg: subject refused: `Catalog` is not an area; .*; areas: kit, .*\n$/);
    expect(refused.stderr.split('\n')).toHaveLength(2);

    writeFileSync(join(dir, 'good'), '# a comment first\ncatalog: a thing\n\nWhy.\n');
    expect(run(HOOK, [join(dir, 'good')], ROOT)).toMatchObject({ status: 0, stderr: '' });
  });

  it('stops `git commit` when installed as core.hooksPath; --no-verify gets past it', () => {
    git(dir, 'init', '-q');
    writeFileSync(join(dir, 'file'), 'x\n');
    git(dir, 'add', 'file');
    const hooked = ['-c', `core.hooksPath=${join(ROOT, '.githooks')}`];
    const refused = git(dir, ...hooked, 'commit', '-q', '-m', 'Add a file.');
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain('commit-msg: subject refused: it is not `area: summary`');
    expect(git(dir, ...hooked, 'commit', '-q', '-m', 'tools: a file').status).toBe(0);
    expect(git(dir, ...hooked, 'commit', '-q', '--allow-empty', '--no-verify', '-m', 'Anything.').status).toBe(0);
    expect(git(dir, 'log', '--format=%s').stdout).toBe('Anything.\ntools: a file\n');
  });
});

describe('tools/bin/git-hooks.js (npm ci installs the hooks)', () => {
  /** A checkout's root holding a copy of the installer, as npm runs it there. */
  function checkout(at: string): string {
    mkdirSync(join(at, 'tools', 'bin'), { recursive: true });
    copyFileSync(INSTALLER, join(at, 'tools', 'bin', 'git-hooks.js'));
    return at;
  }
  const install = (at: string, extra: NodeJS.ProcessEnv = {}) => run(process.execPath, ['tools/bin/git-hooks.js'], at, extra);
  const hooksPath = (at: string) => git(at, 'config', 'core.hooksPath').stdout.trim();

  it('sets core.hooksPath to .githooks in a git work tree', () => {
    git(checkout(dir), 'init', '-q');
    expect(install(dir)).toMatchObject({ status: 0, stdout: 'git hooks: .githooks (core.hooksPath)\n' });
    expect(hooksPath(dir)).toBe('.githooks');
  });

  it('installs nothing, and still exits 0, outside git, in CI, in a linked worktree or over other hooks', () => {
    checkout(dir);
    const outside = { status: 0, stdout: 'git hooks: not installed (no git, or not a git work tree)\n' };
    expect(install(dir)).toMatchObject(outside);
    expect(install(dir, { PATH: join(dir, 'no-bin') })).toMatchObject(outside);

    git(dir, 'init', '-q');
    expect(install(dir, { CI: 'true' })).toMatchObject({ status: 0, stdout: 'git hooks: not installed (CI)\n' });
    expect(hooksPath(dir)).toBe('');

    git(dir, 'commit', '-q', '--allow-empty', '-m', 'tools: first');
    git(dir, 'worktree', 'add', '-q', join(dir, 'linked'));
    expect(install(checkout(join(dir, 'linked'))).stdout).toMatch(/not installed \(a linked worktree shares its git config/);
    expect(hooksPath(dir)).toBe('');

    git(dir, 'config', 'core.hooksPath', '.husky');
    expect(install(dir).stdout).toBe('git hooks: not installed (core.hooksPath is already .husky)\n');
    expect(hooksPath(dir)).toBe('.husky');
  });

  it('leaves a repository it is nested in alone (a tarball unpacked inside another project)', () => {
    git(dir, 'init', '-q');
    expect(install(checkout(join(dir, 'node_modules', 'halo'))).stdout).toMatch(/not installed \(.* is not the top of a git work tree\)/);
    expect(hooksPath(dir)).toBe('');
  });
});
