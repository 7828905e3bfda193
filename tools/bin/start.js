#!/usr/bin/env node
'use strict';
/**
 * `npm start` (and, with --build-only, the `prepare` step of `npm ci`): builds Halo when a source file changed since the last build, then hands over to
 * the launcher (tools/src/start.ts). The check is a walk over file times (milliseconds), so a
 * warm start does not pay for loading the TypeScript compiler just to hear "nothing to do".
 * Plain JavaScript: it runs before the build.
 */
const { spawn } = require('node:child_process');
const { mkdirSync, readdirSync, statSync, utimesSync, writeFileSync } = require('node:fs');
const { dirname, join, resolve } = require('node:path');

const root = resolve(__dirname, '../..');
const stamp = join(root, 'node_modules', '.cache', 'halo', 'build-stamp');
/** What a build reads: sources, protos, and the files that configure the build. */
const INPUTS = ['packages', 'services', 'gateway', 'tools', 'loadtest', 'proto'];
const SKIP = new Set(['node_modules', 'dist', 'gen', 'test', '.data']);

function newestInput(dir, newest = 0) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP.has(entry.name) || entry.name.startsWith('.')) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = newestInput(path, newest);
    else if (/\.(ts|proto|json|ya?ml|graphql|sql)$/.test(entry.name) && !entry.name.endsWith('.test.ts')) {
      newest = Math.max(newest, statSync(path).mtimeMs);
    }
  }
  return newest;
}

function upToDate() {
  try {
    const built = statSync(stamp).mtimeMs;
    const topLevel = ['package.json', 'package-lock.json', 'tsconfig.base.json', 'tsconfig.json'].map(
      (f) => statSync(join(root, f)).mtimeMs,
    );
    return Math.max(...topLevel, ...INPUTS.map((d) => newestInput(join(root, d)))) < built;
  } catch {
    return false; // no stamp yet, or a file vanished mid-walk: build
  }
}

function run(command, args) {
  return new Promise((ok, fail) => {
    const child = spawn(command, args, { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' });
    child.on('error', fail);
    child.on('exit', (code) => (code === 0 ? ok() : fail(new Error(`${command} ${args.join(' ')} exited with ${code}`))));
  });
}

async function build() {
  if (upToDate()) return;
  const startedAt = new Date();
  await run(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['run', 'build', '--silent']);
  // Stamped with the time the build began, so an edit made during the build triggers the next one.
  mkdirSync(dirname(stamp), { recursive: true });
  writeFileSync(stamp, '');
  utimesSync(stamp, startedAt, startedAt);
}

/**
 * The launcher's one-file bundle when it is fresh (docs/adr/0010-start-up-bundles.md), compiled with
 * the V8 code cache of the start before (docs/adr/0012-v8-code-cache.md) unless HALO_CODE_CACHE=0 or
 * HALO_SOURCE_MAPS=1; else its compiled entry.
 */
function runLauncher() {
  const entry = join(root, 'tools', 'dist', 'start.js');
  if (process.env.HALO_BUNDLES === '0') return require(entry);
  const { bundleIsFresh, bundlePath } = require('../dist/bundle.js');
  if (!bundleIsFresh(entry)) return require(entry);
  if (process.env.HALO_CODE_CACHE === '0' || process.env.HALO_SOURCE_MAPS === '1') return require(bundlePath(entry));
  const { runBundle, SYSTEM_READY_EVENT } = require('../dist/code-cache.js');
  const started = runBundle(bundlePath(entry));
  // Once Halo is ready (tools/src/start.ts says so), with the functions of the start compiled.
  process.once(SYSTEM_READY_EVENT, () => {
    try {
      started.writeCache();
    } catch (err) {
      process.stderr.write(`launcher: V8 code cache not written: ${err.message}\n`);
    }
  });
}

const buildOnly = process.argv.includes('--build-only');
/** npm's shell under `npm start`: if it ends during the build, nobody is left to stop Halo. */
const parent = process.ppid;
const orphaned = () => Boolean(process.env.npm_lifecycle_event) && process.ppid !== parent;
build().then(
  () => {
    if (buildOnly) return;
    if (orphaned()) {
      process.stderr.write('Halo did not start: `npm start` ended while Halo was being built.\n');
      process.exit(130);
    }
    runLauncher();
  },
  (err) => {
    process.stderr.write(`Halo could not start: ${err.message}\n`);
    process.exit(1);
  },
);
