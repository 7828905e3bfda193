/** A process's life: `runService`, the `Lifecycle` (signals, drain, close), exit codes. */
export { EXIT_CANNOT_START } from './exit-codes';
export { closeHttpServer, LAUNCHER_GONE_DRAIN_MS, Lifecycle, listen } from './lifecycle';
export { cannotStartReason, type RunnableService, runService } from './run';
