/**
 * Marks dist/esm as ES modules (`{"type": "module"}`): tsc emits `.js` files and Node decides their
 * format from the nearest package.json, which for this package says CommonJS. Run after `tsc -b`
 * by the root `npm run build` and by `npm pack` / `npm publish` (the `prepack` script).
 */
import { mkdirSync, writeFileSync } from 'node:fs';

const dir = new URL('../dist/esm/', import.meta.url);
mkdirSync(dir, { recursive: true });
writeFileSync(new URL('package.json', dir), '{ "type": "module" }\n');
