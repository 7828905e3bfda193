/**
 * Copies the repository's LICENSE (Apache-2.0, which the package declares and which requires the
 * text to go with every copy) next to package.json, where `npm pack` picks it up. Run by this
 * package's `build`, which `npm pack` / `npm publish` run first (`prepack`). The copy is
 * git-ignored: the repository root holds the one text.
 */
import { copyFileSync } from 'node:fs';

copyFileSync(new URL('../../../LICENSE', import.meta.url), new URL('../LICENSE', import.meta.url));
