// One error base with a stable `code`; subclasses only where callers branch on them.

export class KvcrError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Invalid configuration: one line per problem, exit code 2 at the process edge. */
export class ConfigError extends KvcrError {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super("CONFIG_INVALID", problems.join("\n"));
    this.problems = problems;
  }
}

/** Bytes that do not decode: carries the byte offset and a hex preview around it. */
export class ProtocolError extends KvcrError {
  readonly offset: number;
  readonly preview: string;
  constructor(message: string, offset: number, bytes?: Uint8Array) {
    const preview = bytes ? hexPreview(bytes, offset) : "";
    super("PROTOCOL_INVALID", `${message} at byte ${offset}${preview ? ` (${preview})` : ""}`);
    this.offset = offset;
    this.preview = preview;
  }
}

/** A dependency never became ready (agent /live, mocker /health, ...). */
export class ReadinessError extends KvcrError {
  constructor(message: string) {
    super("NOT_READY", message);
  }
}

/** Up to 16 bytes around `offset` as hex, the offending byte bracketed. */
export function hexPreview(bytes: Uint8Array, offset: number): string {
  const start = Math.max(0, offset - 8);
  const end = Math.min(bytes.length, offset + 8);
  const parts: string[] = [];
  for (let i = start; i < end; i++) {
    const hex = (bytes[i] ?? 0).toString(16).padStart(2, "0");
    parts.push(i === offset ? `[${hex}]` : hex);
  }
  if (offset >= bytes.length) parts.push("[<end>]");
  return parts.join(" ");
}
