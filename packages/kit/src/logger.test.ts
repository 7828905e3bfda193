import { capturingLogger } from './testing';

describe('errors in log lines', () => {
  it('keep type, message, code and a bounded stack, never the properties a library attached', () => {
    const { logger, lines } = capturingLogger();
    // What node-postgres does to an idle client's error: the client, with its settings and cancel key.
    const err = Object.assign(new Error('terminating connection due to administrator command'), {
      code: '57P01',
      client: { connectionParameters: { password: 'hunter2' }, processID: 4242, secretKey: 987654321 },
    });
    logger.error({ err: Object.assign(new Error('query failed', { cause: err })) }, 'request failed');
    const logged = lines[0]!.err as Record<string, unknown>;
    expect(Object.keys(logged).sort()).toEqual(['cause', 'message', 'stack', 'type']);
    expect(logged.cause).toEqual({ type: 'Error', message: 'terminating connection due to administrator command', code: '57P01', stack: expect.any(String) });
    expect(JSON.stringify(lines[0])).not.toMatch(/hunter2|secretKey|987654321|processID/);
    expect((logged.stack as string).split('\n').length).toBeLessThanOrEqual(13);
  });
});
