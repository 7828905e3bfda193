import type { Logger } from '../logging/logger';

let rejections = 0;
let installed = false;

/** How many promise rejections nobody handled since the process started (the metric's value). */
export function unhandledRejectionCount(): number {
  return rejections;
}

/**
 * A promise rejection that no code handled is logged (with its stack) and counted
 * (`halo_unhandled_rejections_total`), and the process goes on. Node's default would end it:
 * for a server that is every client's connection dropped because one promise of one request was
 * left unhandled (a socket refused while it was being closed). A rejection is a lost result, not a
 * corrupt state; a thrown exception (`uncaughtException`) still ends the process, as it should.
 * Every occurrence is a bug to fix: the metric is there to alert on, and the fault suites assert it
 * stays 0.
 */
export function reportUnhandledRejections(logger: Logger): void {
  if (installed) return;
  installed = true;
  process.on('unhandledRejection', (reason: unknown) => {
    rejections++;
    logger.error({ err: reason }, 'unhandled promise rejection (a bug); the process goes on');
  });
}
