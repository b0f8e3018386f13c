import * as fs from 'node:fs';
import * as path from 'node:path';
import { format } from 'node:util';
import { redactForLog } from '../store/redact';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'off';
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, off: 100 };

export interface Logger {
  debug(msg: string, ...args: unknown[]): void;
  info(msg: string, ...args: unknown[]): void;
  warn(msg: string, ...args: unknown[]): void;
  error(msg: string, ...args: unknown[]): void;
  setLevel(level: LogLevel): void;
  setFile(file: string | null): void;
}

export function isLogLevel(v: unknown): v is LogLevel {
  return typeof v === 'string' && v in ORDER;
}

/**
 * Appends to a file, never to stdout (the host's stdout is the msgpack channel).
 * Synchronous appends keep ordering simple and survive a crash right after the line.
 */
export function createFileLogger(file: string | null, level: LogLevel = 'info'): Logger {
  let current = level;
  let target = file;
  let dirReady = false;
  const write = (lvl: LogLevel, msg: string, args: unknown[]) => {
    if (!target || ORDER[lvl] < ORDER[current]) return;
    try {
      if (!dirReady) {
        fs.mkdirSync(path.dirname(target), { recursive: true });
        dirReady = true;
      }
      // Credentials never reach the log: the API key, any URL's user:password@ (redact.ts).
      const line = `${new Date().toISOString()} ${lvl.toUpperCase().padEnd(5)} [${process.pid}] ${redactForLog(format(msg, ...args))}\n`;
      fs.appendFileSync(target, line);
    } catch {
      // Logging must never take the host down.
    }
  };
  return {
    debug: (m, ...a) => write('debug', m, a),
    info: (m, ...a) => write('info', m, a),
    warn: (m, ...a) => write('warn', m, a),
    error: (m, ...a) => write('error', m, a),
    setLevel: (l) => {
      current = l;
    },
    setFile: (f) => {
      target = f;
      dirReady = false;
    },
  };
}

/** Redirects console.* into the logger so a stray console.log cannot corrupt the RPC stream. */
export function guardConsole(log: Logger): void {
  const to = (fn: (m: string, ...a: unknown[]) => void) => (...args: unknown[]) => fn('%s', format(...args));
  console.log = to(log.info);
  console.info = to(log.info);
  console.debug = to(log.debug);
  console.warn = to(log.warn);
  console.error = to(log.error);
  console.dir = to(log.debug);
  console.table = to(log.debug);
  console.trace = to(log.debug);
}
