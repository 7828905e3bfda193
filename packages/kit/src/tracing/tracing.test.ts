import { startTracing, tracingEnabled } from './tracing';

describe('tracing switch (the standard OTEL_* environment)', () => {
  it('is off by default, so the embedded mode loads no SDK', () => {
    expect(tracingEnabled({})).toBe(false);
    expect(startTracing('content', {})).toBeNull();
  });

  it('is on with an OTLP endpoint or a named exporter', () => {
    expect(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
    expect(tracingEnabled({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toBe(true);
    expect(tracingEnabled({ OTEL_TRACES_EXPORTER: 'otlp' })).toBe(true);
  });

  it('OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none win over an endpoint', () => {
    expect(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' })).toBe(false);
    expect(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
  });
});
