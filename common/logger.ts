import { pino, type Logger } from 'pino';

/**
 * JSON logs. Keys must never reach a log line: the Authorization header and anything named like a
 * key are redacted at the logger, so a careless `log.info({ req })` cannot leak one.
 */
export function createLogger(name: string, level = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    name,
    level,
    base: { name },
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
  });
}

export type { Logger };
