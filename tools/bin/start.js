#!/usr/bin/env node
'use strict';
/**
 * `npm start`: builds Halo and, for the embedded mode, prepares the empty PGlite cluster that
 * every service database is copied from — both at once, since each takes seconds on its own —
 * then hands over to the launcher (tools/src/start.ts). Plain JavaScript: it runs before the build.
 */
const { spawn } = require('node:child_process');
const { join, resolve } = require('node:path');

const root = resolve(__dirname, '../..');
const template = join(root, '.data', '.pglite-template');

function run(command, args) {
  return new Promise((ok, fail) => {
    const child = spawn(command, args, { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' });
    child.on('error', fail);
    child.on('exit', (code) => (code === 0 ? ok() : fail(new Error(`${command} ${args.join(' ')} exited with ${code}`))));
  });
}

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const steps = [run(npm, ['run', 'build', '--silent'])];
if (!process.env.DATABASE_URL) {
  steps.push(run(process.execPath, [join(root, 'packages/kit/bin/pglite-init.js'), '--atomic', template]));
}
Promise.all(steps).then(
  () => require('../dist/start.js'),
  (err) => {
    process.stderr.write(`Halo could not start: ${err.message}\n`);
    process.exit(1);
  },
);
