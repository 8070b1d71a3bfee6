// One tagged consola logger per role, created at the process edge and passed in.
import { createConsola, type ConsolaInstance, type LogObject } from "consola";

export type Logger = ConsolaInstance;
export const LOG_LEVELS = { silent: -999, error: 0, warn: 1, info: 3, debug: 4, trace: 5 } as const;
export type LogLevelName = keyof typeof LOG_LEVELS;
export type LogFormat = "pretty" | "json";

export interface LoggerOptions {
  level?: LogLevelName;
  format?: LogFormat;
  tag?: string;
  /** Where lines go; defaults to stderr so stdout stays for command output (JSON lines, reports). */
  stream?: NodeJS.WritableStream;
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const stream = opts.stream ?? process.stderr;
  const level = LOG_LEVELS[opts.level ?? "info"];
  const base = opts.format === "json"
    ? createConsola({ level, reporters: [jsonReporter(stream)] })
    : createConsola({ level, stdout: stream as NodeJS.WriteStream, stderr: stream as NodeJS.WriteStream, formatOptions: { date: true, colors: stream === process.stderr && process.stderr.isTTY } });
  return opts.tag ? base.withTag(opts.tag) : base;
}

function jsonReporter(stream: NodeJS.WritableStream) {
  return {
    log(obj: LogObject) {
      const [msg, ...rest] = obj.args;
      // `role`: the process's role (its tag), the field `up --log-format json` sets on every line it passes on.
      const line: Record<string, unknown> = { ts: obj.date.toISOString(), level: obj.type, role: obj.tag || undefined, tag: obj.tag || undefined, msg: String(msg) };
      if (rest.length > 0) line.args = rest.map((a) => (typeof a === "bigint" ? a.toString() : a));
      stream.write(JSON.stringify(line) + "\n");
    },
  };
}
