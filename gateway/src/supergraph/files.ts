import { readFileSync, unwatchFile, watchFile, type Stats } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { Logger } from '@halo/kit/logging';

/** How often a composed file is checked for a new version (a stat, so cheap). */
export const COMPOSED_FILE_POLL_MS = 1_000;

export interface WatchedFile<T> {
  /** The version in service. */
  current(): T;
  stop(): Promise<void>;
}

export interface WatchOptions<T> {
  path: string;
  /** The variable that points at the file, for the start-up error. */
  variable: string;
  /** What it is, for logs: `route table`. */
  what: string;
  logger: Logger;
  /** Turns the text into what is served; throws to refuse it. */
  accept: (text: string) => T;
  /** Called with each accepted new version; throwing refuses it too (the previous one stays). */
  onChange?: (value: T) => void;
  /** false: read once at start-up, never reloaded (the registry takes over). Default true. */
  watch?: boolean;
}

/** Reads the first version synchronously; throws naming the file and its variable. */
function readFirst<T>(opts: WatchOptions<T>, read: (path: string) => string): { text: string; value: T } {
  try {
    const text = read(opts.path);
    return { text, value: opts.accept(text) };
  } catch (err) {
    throw new Error(`Cannot load the ${opts.what} at ${opts.path} (${opts.variable}): ${(err as Error).message}`);
  }
}

/**
 * A composed file the gateway serves (supergraph, route table, OpenAPI document), read now and
 * reloaded when it changes: the file is polled, which (unlike fs.watch) survives editors'
 * rename-over writes and Kubernetes' ConfigMap symlink swaps. A version that fails to read or is
 * refused is logged and the previous one stays. The first version must load.
 */
export function watchComposedFile<T>(opts: WatchOptions<T>): WatchedFile<T> {
  const first = readFirst(opts, (path) => readFileSync(path, 'utf8'));
  return followFile(opts, first.text, first.value);
}

/** As watchComposedFile, reading the first version without blocking (the supergraph: large). */
export async function watchComposedFileAsync<T>(opts: WatchOptions<T>): Promise<WatchedFile<T>> {
  let text: string;
  try {
    text = await readFile(opts.path, 'utf8');
  } catch (err) {
    throw new Error(`Cannot load the ${opts.what} at ${opts.path} (${opts.variable}): ${(err as Error).message}`);
  }
  const first = readFirst(opts, () => text);
  return followFile(opts, first.text, first.value);
}

function followFile<T>(opts: WatchOptions<T>, firstText: string, firstValue: T): WatchedFile<T> {
  const { path, what, logger } = opts;
  let text = firstText;
  let value = firstValue;
  if (opts.watch === false) return { current: () => value, stop: () => Promise.resolve() };
  let stopped = false;
  let reloading = Promise.resolve();
  const reload = async () => {
    let next: string;
    try {
      next = await readFile(path, 'utf8');
    } catch (err) {
      logger.error({ path, message: (err as Error).message }, `${what} unreadable; keeping the previous one`);
      return;
    }
    if (next === text || stopped) return;
    try {
      const accepted = opts.accept(next);
      opts.onChange?.(accepted);
      value = accepted;
      text = next;
      logger.info({ path }, `${what} reloaded`);
    } catch (err) {
      logger.error({ path, message: (err as Error).message }, `${what} rejected; keeping the previous one`);
    }
  };
  const onStat = (now: Stats, before: Stats) => {
    if (now.mtimeMs === before.mtimeMs && now.size === before.size) return;
    // One reload at a time: @apollo/gateway refuses an update while another is in progress.
    reloading = reloading.then(reload);
  };
  watchFile(path, { interval: COMPOSED_FILE_POLL_MS, persistent: false }, onStat);
  return {
    current: () => value,
    async stop() {
      stopped = true;
      unwatchFile(path, onStat);
      await reloading;
    },
  };
}
