#!/usr/bin/env node
'use strict';
/**
 * Creates an empty PGlite cluster (initdb) in a short-lived process of its own: initdb leaves a
 * process at ~800 MB of RSS that it never gives back, so services only ever open existing clusters.
 * Plain JavaScript, so `npm start` can run it while TypeScript is still building.
 *
 *   node pglite-init.js <dir>           initialise <dir> (nothing to do if it holds a cluster)
 *   node pglite-init.js --atomic <dir>  build beside <dir> and rename into place, so concurrent
 *                                       callers never see half a cluster (shared templates)
 */
const { existsSync, mkdirSync, renameSync, rmSync } = require('node:fs');
const { join } = require('node:path');
const { PGlite } = require('@electric-sql/pglite');

const args = process.argv.slice(2);
const atomic = args[0] === '--atomic';
const dir = atomic ? args[1] : args[0];
if (!dir) {
  process.stderr.write('usage: pglite-init.js [--atomic] <dir>\n');
  process.exit(2);
}
const isCluster = (d) => existsSync(join(d, 'PG_VERSION'));

async function init(target) {
  mkdirSync(target, { recursive: true });
  const db = new PGlite({ dataDir: target });
  await db.waitReady;
  await db.close();
}

async function main() {
  if (isCluster(dir)) return;
  if (!atomic) return init(dir);
  const building = `${dir}.${process.pid}.tmp`;
  rmSync(building, { recursive: true, force: true });
  await init(building);
  try {
    renameSync(building, dir);
  } catch (err) {
    rmSync(building, { recursive: true, force: true });
    if (!isCluster(dir)) throw err;
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`${(err && err.message) || err}\n`);
    process.exit(1);
  },
);
