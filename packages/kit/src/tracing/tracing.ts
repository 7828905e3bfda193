import type { IncomingMessage } from 'node:http';
import type { NodeSDK } from '@opentelemetry/sdk-node';

/**
 * OpenTelemetry tracing with the official SDK, configured by the standard `OTEL_*` environment
 * (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/): it is on
 * when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, or
 * `OTEL_TRACES_EXPORTER` names an exporter other than `none`; `OTEL_SDK_DISABLED=true` turns it
 * off. Off otherwise — the embedded mode's default — at no cost.
 *
 * One trace per client request: the gateway's incoming HTTP span, its subgraph fetches (undici)
 * and proxied REST calls (http), each service's incoming HTTP, gRPC client and server calls,
 * PostgreSQL queries and Redis commands, joined by W3C `traceparent`. Every log line written
 * inside a span carries `trace_id` and `span_id` (pino instrumentation).
 *
 * It must start before the modules it patches are loaded: each process's `main.ts` calls it
 * first, and this module imports nothing else of the kit. The SDK itself is loaded only when
 * tracing is on (it costs start-up time and memory otherwise).
 */
export function startTracing(component: string, env: NodeJS.ProcessEnv = process.env): NodeSDK | null {
  if (!tracingEnabled(env)) return null;
  env.OTEL_SERVICE_NAME ??= `halo-${component}`;
  /* eslint-disable @typescript-eslint/no-require-imports -- loaded only when tracing is on */
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof import('@opentelemetry/sdk-node');
  const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http') as typeof import('@opentelemetry/instrumentation-http');
  const { UndiciInstrumentation } =
    require('@opentelemetry/instrumentation-undici') as typeof import('@opentelemetry/instrumentation-undici');
  const { GrpcInstrumentation } = require('@opentelemetry/instrumentation-grpc') as typeof import('@opentelemetry/instrumentation-grpc');
  const { PgInstrumentation } = require('@opentelemetry/instrumentation-pg') as typeof import('@opentelemetry/instrumentation-pg');
  const { IORedisInstrumentation } =
    require('@opentelemetry/instrumentation-ioredis') as typeof import('@opentelemetry/instrumentation-ioredis');
  const { PinoInstrumentation } = require('@opentelemetry/instrumentation-pino') as typeof import('@opentelemetry/instrumentation-pino');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const quiet = new Set(['/healthz', '/readyz', '/metrics']);
  const sdk = new NodeSDK({
    instrumentations: [
      new HttpInstrumentation({
        // Probes and scrapes come every few seconds and are not requests anyone traces.
        ignoreIncomingRequestHook: (req: IncomingMessage) => quiet.has((req.url ?? '').split('?')[0]!),
      }),
      new UndiciInstrumentation(),
      new GrpcInstrumentation({ ignoreGrpcMethods: ['Check', 'Watch'] }),
      new PgInstrumentation({ enhancedDatabaseReporting: false }),
      new IORedisInstrumentation(),
      new PinoInstrumentation(),
    ],
  });
  sdk.start();
  // Spans still buffered go out before the process ends (SIGTERM is the Lifecycle's; this runs after).
  process.once('beforeExit', () => void sdk.shutdown().catch(() => undefined));
  return sdk;
}

/** Whether the standard environment asks for traces. */
export function tracingEnabled(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED === 'true') return false;
  const exporter = env.OTEL_TRACES_EXPORTER?.trim();
  if (exporter === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || exporter);
}
