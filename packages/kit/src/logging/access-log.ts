import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from './logger';
import { currentRequestId, boundRequestId } from './request-context';

/**
 * How an access-log line names what was asked: the gateway writes the `path` alone (a query string
 * can carry credentials, an OAuth callback's `code`), a service its `url` as routed.
 */
export type AccessLogTarget = 'path' | 'url';

/**
 * One access-log line per request, the same at the gateway and in every service:
 * `{ requestId, method, path | url, status, ms }` with the message `request`, written when the
 * response closes; a client that left before the answer was complete adds `aborted: true`.
 * Called inside the request's context, where the request id is read: 'close' can fire after
 * that context has ended, so the id is taken now and named on the line.
 */
export function logRequest(logger: Logger, req: IncomingMessage, res: ServerResponse, key: AccessLogTarget, target: string): void {
  const lines = accessLoggerOf(logger);
  const requestId = currentRequestId() ?? boundRequestId(req);
  const start = process.hrtime.bigint();
  // 'close' fires once per response: `on` spares the once-wrapper `once` makes per request.
  res.on('close', () => {
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    const line =
      key === 'path'
        ? { requestId, method: req.method, path: target, status: res.statusCode, ms }
        : { requestId, method: req.method, url: target, status: res.statusCode, ms };
    const entry = res.writableFinished ? line : { ...line, aborted: true };
    if ((res as Quiet)[QUIET] === true) lines.debug(entry, 'request');
    else lines.info(entry, 'request');
  });
}

const QUIET = Symbol('halo.accessLog.quiet');
type Quiet = ServerResponse & { [QUIET]?: boolean };

/**
 * This answer's access-log line at `debug` instead of `info`: for an answer that says nothing
 * happened and comes every few seconds from every replica (the registry's 304 to a gateway's
 * poll), which at `info` would be most of the log.
 */
export function quietAccessLog(res: ServerResponse): void {
  (res as Quiet)[QUIET] = true;
}

const accessLoggers = new WeakMap<Logger, Logger>();

/**
 * The logger's twin for access lines: the same name, level, fields and output, without the
 * redaction pass. An access line holds only the fields above (no headers, no body, nothing the
 * redact paths name), and walking those paths on every line cost ~3 % of the gateway's CPU per
 * proxied request.
 */
function accessLoggerOf(logger: Logger): Logger {
  let lines = accessLoggers.get(logger);
  if (lines === undefined) accessLoggers.set(logger, (lines = logger.child({}, { redact: [] })));
  return lines;
}
