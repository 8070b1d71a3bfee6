// Byte-in / event-out ZMTP 3.1 parser (NULL mechanism): greeting, handshake order, short and long
// frames, MORE, commands, size limit. Knows nothing about sockets; chunks may split anywhere.
// Frames that lie inside one chunk are zero-copy views of it; frames spanning chunks are copied
// into a buffer that grows with the bytes received, never with the size a peer merely declares.
import { hexPreview, ProtocolError } from "../../lib/errors.ts";
import { CommandKind, decodeCommand, isCommandFault, type ZmtpCommand } from "./commands.ts";
import { AS_SERVER_OFFSET, FrameFlag, GREETING_BYTES, MECHANISM_BYTES, MECHANISM_OFFSET, NULL_MECHANISM, RESERVED_FLAG_BITS } from "./constants.ts";

/** In the reason a peer is dropped for: a message over the size limit (the socket's user may count it lost). */
export const MESSAGE_TOO_LARGE = "exceeds maxMessageBytes";

export interface Greeting {
  major: number;
  minor: number;
  mechanism: string;
  asServer: boolean;
}

/** Receives parsed events in wire order. Calls happen synchronously inside `feed`. */
export interface ZmtpParserHandler {
  greeting(greeting: Greeting): void;
  /** READY (always the first command), then SUBSCRIBE/CANCEL/PING/PONG/ERROR/unknown. */
  command(command: ZmtpCommand): void;
  /** One complete multipart message; frames are never empty as an array (a frame may be 0 bytes). */
  message(frames: Uint8Array[]): void;
}

export interface ZmtpParserOptions {
  /** Upper bound on one message (all its frames) and on one command frame, in bytes. */
  maxMessageBytes: number;
}

export const DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/**
 * Smallest buffer for a frame spanning chunks. Frames up to this size get their full size at once
 * (one copy, as before); larger ones start at what has arrived and double as more does, so a peer
 * that declares 16 MiB and sends nothing costs at most this much.
 */
const MIN_PARTIAL_BODY_BYTES = 4096;

const State = { Greeting: 0, Header: 1, Body: 2 } as const;
type State = (typeof State)[keyof typeof State];
const latin1 = new TextDecoder("latin1");

export class ZmtpParser {
  private state: State = State.Greeting;
  private readonly greetingBuf = new Uint8Array(GREETING_BYTES);
  private greetingFill = 0;
  private readonly header = new Uint8Array(9);
  private headerFill = 0;
  private frameFlags = 0;
  /** Stream offsets of the current frame's header and body (chunks may split either). */
  private headerAt = 0;
  private bodyAt = 0;
  /** The frame being received across chunks: its bytes so far (capacity may be below bodySize). */
  private body: Uint8Array | undefined;
  private bodySize = 0;
  private bodyFill = 0;
  private parts: Uint8Array[] = [];
  private messageBytes = 0;
  private handshakeDone = false;
  /** Stream offset of the current chunk's first byte (for error positions). */
  private consumed = 0;
  private halted = false;
  private failure: ProtocolError | undefined;
  private readonly maxMessageBytes: number;

  constructor(private readonly handler: ZmtpParserHandler, opts: Partial<ZmtpParserOptions> = {}) {
    this.maxMessageBytes = opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  }

  /** The protocol violation that stopped the parser, if any. */
  get error(): ProtocolError | undefined {
    return this.failure;
  }

  /** Bytes allocated for a frame spanning chunks (0 when none): memory accounting. */
  get partialFrameBytes(): number {
    return this.body?.length ?? 0;
  }

  /** Stops delivering events (the owner closed the connection from inside a callback). */
  halt(): void {
    this.halted = true;
    // Nothing more will be parsed: let go of a partial frame now, not when the connection is freed.
    this.body = undefined;
    this.parts = [];
  }

  /** Parses one chunk. Returns the violation (also kept in `error`); after one, input is ignored. */
  feed(chunk: Uint8Array): ProtocolError | undefined {
    if (this.failure || this.halted) return this.failure;
    this.run(chunk);
    this.consumed += chunk.length;
    return this.failure;
  }

  private run(chunk: Uint8Array): void {
    const len = chunk.length;
    let pos = 0;
    if (this.state === State.Greeting) {
      pos = this.feedGreeting(chunk);
      if (this.failure || this.halted || this.state === State.Greeting) return;
    }
    while (pos < len && !this.halted) {
      if (this.state === State.Body) {
        const need = this.bodySize - this.bodyFill;
        const take = need < len - pos ? need : len - pos;
        let body = this.body!;
        if (this.bodyFill + take > body.length) body = this.growBody(this.bodyFill + take);
        body.set(chunk.subarray(pos, pos + take), this.bodyFill);
        this.bodyFill += take;
        pos += take;
        if (this.bodyFill === this.bodySize) {
          this.body = undefined;
          this.state = State.Header;
          if (!this.frame(this.frameFlags, body, chunk)) return;
        }
        continue;
      }
      // Frame header: flags, then a 1-byte or 8-byte big-endian size.
      if (this.headerFill === 0) this.headerAt = this.consumed + pos;
      let flags: number;
      let size: number;
      if (this.headerFill === 0 && (len - pos >= 9 || (len - pos >= 2 && (chunk[pos]! & FrameFlag.Long) === 0))) {
        flags = chunk[pos]!;
        if ((flags & FrameFlag.Long) === 0) {
          size = chunk[pos + 1]!;
          pos += 2;
        } else {
          size = readU64(chunk, pos + 1);
          pos += 9;
        }
      } else {
        const hdr = this.header;
        while (pos < len) {
          hdr[this.headerFill++] = chunk[pos++]!;
          if (this.headerFill === ((hdr[0]! & FrameFlag.Long) !== 0 ? 9 : 2)) break;
        }
        const need = (hdr[0]! & FrameFlag.Long) !== 0 ? 9 : 2;
        if (this.headerFill < need) return;
        this.headerFill = 0;
        flags = hdr[0]!;
        size = need === 9 ? readU64(hdr, 1) : hdr[1]!;
      }
      if ((flags & RESERVED_FLAG_BITS) !== 0) return this.fail(`frame flags 0x${hex(flags)} set reserved bits (not a ZMTP 3 frame)`, chunk, this.headerAt);
      if ((flags & FrameFlag.Command) !== 0) {
        if ((flags & FrameFlag.More) !== 0) return this.fail("command frame with the MORE flag", chunk, this.headerAt);
        if (size > this.maxMessageBytes) return this.fail(`command frame of ${size} bytes exceeds maxMessageBytes ${this.maxMessageBytes}`, chunk, this.headerAt);
      } else {
        if (this.messageBytes + size > this.maxMessageBytes) {
          return this.fail(`message of at least ${this.messageBytes + size} bytes ${MESSAGE_TOO_LARGE} ${this.maxMessageBytes}`, chunk, this.headerAt);
        }
        this.messageBytes += size;
      }
      this.bodyAt = this.consumed + pos;
      if (len - pos >= size) {
        const body = chunk.subarray(pos, pos + size);
        pos += size;
        if (!this.frame(flags, body, chunk)) return;
      } else {
        const have = len - pos;
        this.frameFlags = flags;
        this.bodySize = size;
        this.body = new Uint8Array(Math.min(size, Math.max(have, MIN_PARTIAL_BODY_BYTES)));
        this.body.set(chunk.subarray(pos), 0);
        this.bodyFill = have;
        pos = len;
        this.state = State.Body;
      }
    }
  }

  /** Doubles the partial frame's buffer (at least to `needed`, at most to the frame size). */
  private growBody(needed: number): Uint8Array {
    const old = this.body!;
    const grown = new Uint8Array(Math.min(this.bodySize, Math.max(old.length * 2, needed)));
    grown.set(old.subarray(0, this.bodyFill), 0);
    this.body = grown;
    return grown;
  }

  /** Consumes greeting bytes, checking each as it arrives so garbage is refused at once. */
  private feedGreeting(chunk: Uint8Array): number {
    const take = Math.min(GREETING_BYTES - this.greetingFill, chunk.length);
    const buf = this.greetingBuf;
    for (let i = 0; i < take; i++) {
      const at = this.greetingFill;
      const byte = chunk[i]!;
      buf[this.greetingFill++] = byte;
      if (at === 0 && byte !== 0xff) {
        this.fail(`bad greeting: signature must start with 0xff, got 0x${hex(byte)} (peer is not speaking ZMTP)`, chunk, this.consumed + i);
        return i;
      }
      if (at === 9 && (byte & 0x01) === 0) {
        this.fail(`bad greeting: byte 9 is 0x${hex(byte)}, a ZMTP 1.0 peer; only ZMTP 3.x is supported`, chunk, this.consumed + i);
        return i;
      }
      if (at === 10 && byte < 3) {
        this.fail(`unsupported ZMTP version ${byte}.x; only ZMTP 3.x is supported`, chunk, this.consumed + i);
        return i;
      }
      if (at === MECHANISM_OFFSET + MECHANISM_BYTES - 1) {
        const mechanism = decodeMechanism(buf);
        if (mechanism !== NULL_MECHANISM) {
          this.fail(`unsupported security mechanism "${mechanism}"; only NULL is supported`, chunk, MECHANISM_OFFSET);
          return i;
        }
      }
    }
    if (this.greetingFill < GREETING_BYTES) return take;
    this.state = State.Header;
    this.handler.greeting({ major: buf[10]!, minor: buf[11]!, mechanism: decodeMechanism(buf), asServer: buf[AS_SERVER_OFFSET] === 1 });
    return take;
  }

  /** Handles one complete frame; false when the parser failed or was halted. */
  private frame(flags: number, body: Uint8Array, chunk: Uint8Array): boolean {
    const bodyPos = this.bodyAt;
    if ((flags & FrameFlag.Command) !== 0) {
      if (this.parts.length > 0) return this.failed("command frame inside a multipart message", chunk, bodyPos);
      const command = decodeCommand(body);
      if (isCommandFault(command)) return this.failed(`malformed command: ${command.reason}`, chunk, bodyPos + command.offset);
      if (!this.handshakeDone) {
        if (command.kind === CommandKind.Ready) this.handshakeDone = true;
        else if (command.kind !== CommandKind.Error) return this.failed(`expected READY to finish the NULL handshake, got ${commandLabel(command)}`, chunk, bodyPos);
      } else if (command.kind === CommandKind.Ready) {
        return this.failed("duplicate READY after the handshake", chunk, bodyPos);
      }
      this.handler.command(command);
      return !this.halted;
    }
    if (!this.handshakeDone) return this.failed("message frame before the handshake finished (no READY yet)", chunk, bodyPos);
    this.parts.push(body);
    if ((flags & FrameFlag.More) === 0) {
      const frames = this.parts;
      this.parts = [];
      this.messageBytes = 0;
      this.handler.message(frames);
    }
    return !this.halted;
  }

  /** Records the violation at stream offset `at`; the preview shows the current chunk near it. */
  private fail(reason: string, chunk: Uint8Array, at: number): void {
    const near = hexPreview(chunk, Math.max(0, Math.min(at - this.consumed, chunk.length)));
    this.failure = new ProtocolError(`${reason} [bytes: ${near}]`, at);
  }

  private failed(reason: string, chunk: Uint8Array, at: number): false {
    this.fail(reason, chunk, at);
    return false;
  }
}

/** Big-endian u64 as a number; sizes beyond 2^53 saturate (they exceed any size limit anyway). */
function readU64(b: Uint8Array, o: number): number {
  const high = ((b[o]! << 24) | (b[o + 1]! << 16) | (b[o + 2]! << 8) | b[o + 3]!) >>> 0;
  const low = ((b[o + 4]! << 24) | (b[o + 5]! << 16) | (b[o + 6]! << 8) | b[o + 7]!) >>> 0;
  if (high > 0x1f_ffff) return Number.MAX_SAFE_INTEGER;
  return high * 0x1_0000_0000 + low;
}

function decodeMechanism(greeting: Uint8Array): string {
  const field = greeting.subarray(MECHANISM_OFFSET, MECHANISM_OFFSET + MECHANISM_BYTES);
  const end = field.indexOf(0);
  return latin1.decode(end < 0 ? field : field.subarray(0, end));
}

function commandLabel(c: ZmtpCommand): string {
  return c.kind === CommandKind.Unknown ? c.name : c.kind.toUpperCase();
}

function hex(n: number): string {
  return n.toString(16).padStart(2, "0");
}
