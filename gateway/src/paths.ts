import { resolve } from 'node:path';

/**
 * The gateway package's own folder. Every file the gateway reads beside itself is found from here,
 * never from a nested module's `__dirname`: this file sits at the top of `src/` (and `dist/`), where
 * the single-file bundle that `npm start` runs also sits, so the paths are the same in both.
 */
export const GATEWAY_DIR = resolve(__dirname, '..');
