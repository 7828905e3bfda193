#!/usr/bin/env node
'use strict';
/**
 * The end of `npm ci` / `npm install` (the root `prepare` script): points git at the repository's
 * hooks, `git config core.hooksPath .githooks` (the commit-msg hook checks CONTRIBUTING.md's
 * subject rule). It never fails the install and says in one line why it installed nothing: in CI,
 * without git, outside a git work tree of this repository (a tarball, a dependency), in a linked
 * worktree (its config is the main checkout's too: install there), or when core.hooksPath already
 * names other hooks. Plain JavaScript: it runs whether or not the build did.
 */
const { spawnSync } = require('node:child_process');
const { realpathSync } = require('node:fs');
const { resolve } = require('node:path');

const root = realpathSync(resolve(__dirname, '../..'));
const HOOKS = '.githooks';

/** git's answer, or undefined when git is missing or refuses. */
function git(...args) {
  const run = spawnSync('git', args, { cwd: root, encoding: 'utf8' });
  return run.status === 0 ? run.stdout.trim() : undefined;
}

/** Why the hooks stay as they are, or undefined once they are installed. */
function install() {
  if (process.env.CI) return 'CI';
  const top = git('rev-parse', '--show-toplevel');
  if (top === undefined) return 'no git, or not a git work tree';
  if (realpathSync(top) !== root) return `${root} is not the top of a git work tree`;
  // Both relative to `root` when git prints them relative.
  const [gitDir, commonDir] = [git('rev-parse', '--git-dir'), git('rev-parse', '--git-common-dir')];
  if (!gitDir || !commonDir) return 'git rev-parse failed';
  if (realpathSync(resolve(root, gitDir)) !== realpathSync(resolve(root, commonDir))) {
    return `a linked worktree shares its git config with the main checkout: run \`git config core.hooksPath ${HOOKS}\` there`;
  }
  const current = git('config', 'core.hooksPath');
  if (current === HOOKS) return undefined;
  if (current) return `core.hooksPath is already ${current}`;
  return git('config', 'core.hooksPath', HOOKS) === undefined ? 'git config failed' : undefined;
}

try {
  const skipped = install();
  process.stdout.write(skipped ? `git hooks: not installed (${skipped})\n` : `git hooks: ${HOOKS} (core.hooksPath)\n`);
} catch (err) {
  process.stdout.write(`git hooks: not installed (${err.message})\n`);
}
