import { pino, type Logger } from "pino";

export type { Logger } from "pino";

/**
 * Paths redacted from every log line: no secret reaches a log, even when a whole
 * request or account is logged by mistake.
 */
export const REDACT_PATHS = [
  "password",
  "totp_secret",
  "answer",
  "authorization",
  "token",
  "key",
  "*.password",
  "*.totp_secret",
  "*.answer",
  "*.authorization",
  "*.token",
  "*.key",
  "req.headers.authorization",
  "headers.authorization",
];

/** Logs go to stderr so stdout stays free (the stdio MCP transport owns it). */
export function createLogger(level: string = "info"): Logger {
  return pino({ level, redact: { paths: REDACT_PATHS, censor: "[redacted]" } }, pino.destination(2));
}

export const silentLogger: Logger = pino({ level: "silent" });
