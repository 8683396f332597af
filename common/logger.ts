import { pino, type DestinationStream, type Logger } from 'pino';
import { traceFields } from './tracing/call-trace.js';

/**
 * JSON logs. Keys must never reach a log line: the Authorization header and anything named like a
 * key are redacted at the logger, so a careless `log.info({ req })` cannot leak one.
 */
export function createLogger(
  name: string,
  level = process.env.LOG_LEVEL ?? 'info',
  /** Where lines go: standard output unless given (a test reads them back). */
  destination?: DestinationStream,
): Logger {
  const options: pino.LoggerOptions = {
    name,
    level,
    base: { name },
    // The trace and span of the call a line is written for (trace_id, span_id: OpenTelemetry's
    // names), when tracing is on: an SRE goes from a line to its trace and back.
    mixin: traceFields,
    redact: {
      paths: [
        'authorization',
        'headers.authorization',
        'req.headers.authorization',
        'request.headers.authorization',
        'key',
        '*.key',
        'apiKey',
        '*.apiKey',
        'token',
        '*.token',
        'secretAccessKey',
        '*.secretAccessKey',
      ],
      censor: '[redacted]',
    },
  };
  return destination === undefined ? pino(options) : pino(options, destination);
}

export type { Logger };
