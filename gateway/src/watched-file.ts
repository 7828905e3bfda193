import { readFileSync, unwatchFile, watchFile, type Stats } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { Logger } from '@halo/kit';

/** How often a composed file is checked for a new version (a stat, so cheap). */
export const COMPOSED_FILE_POLL_MS = 1_000;

export interface WatchedFile<T> {
  /** The version in service. */
  current(): T;
  stop(): void;
}

/**
 * A composed file the gateway serves (the route table, the OpenAPI document), read now and
 * reloaded when it changes, exactly like the supergraph (src/graphql.ts): the file is polled,
 * which survives editors' rename-over writes and Kubernetes' ConfigMap symlink swaps. `accept`
 * turns the text into what is served and throws to refuse it; a version that fails to read or is
 * refused is logged and the previous one stays. The first version must load: it throws here,
 * naming the file and its variable.
 */
export function watchComposedFile<T>(opts: {
  path: string;
  /** The variable that points at the file, for the start-up error. */
  variable: string;
  /** What it is, for logs: `route table`. */
  what: string;
  logger: Logger;
  accept: (text: string) => T;
  /** Called with each accepted new version. */
  onChange?: (value: T) => void;
}): WatchedFile<T> {
  const { path, what, logger } = opts;
  let text: string;
  let value: T;
  try {
    text = readFileSync(path, 'utf8');
    value = opts.accept(text);
  } catch (err) {
    throw new Error(`Cannot load the ${what} at ${path} (${opts.variable}): ${(err as Error).message}`);
  }
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
      value = accepted;
      text = next;
      opts.onChange?.(accepted);
      logger.info({ path }, `${what} reloaded`);
    } catch (err) {
      logger.error({ path, message: (err as Error).message }, `${what} rejected; keeping the previous one`);
    }
  };
  const onStat = (now: Stats, before: Stats) => {
    if (now.mtimeMs === before.mtimeMs && now.size === before.size) return;
    reloading = reloading.then(reload);
  };
  watchFile(path, { interval: COMPOSED_FILE_POLL_MS, persistent: false }, onStat);
  return {
    current: () => value,
    stop() {
      stopped = true;
      unwatchFile(path, onStat);
    },
  };
}
