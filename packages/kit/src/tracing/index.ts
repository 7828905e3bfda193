/** OpenTelemetry tracing, started first by each process (it imports nothing else of the kit). */
export { startTracing, tracingEnabled } from './tracing';
