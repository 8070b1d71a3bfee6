// Decoding of ZMTP command bodies (READY, ERROR, SUBSCRIBE, CANCEL, PING, PONG) into values,
// plus the ZMTP 3.0 message form of subscriptions. Malformed bodies come back as a reason string.
import { CommandName, MAX_IDENTITY_BYTES } from "./constants.ts";

export const CommandKind = {
  Ready: "ready",
  Error: "error",
  Subscribe: "subscribe",
  Cancel: "cancel",
  Ping: "ping",
  Pong: "pong",
  Unknown: "unknown",
} as const;
export type CommandKind = (typeof CommandKind)[keyof typeof CommandKind];

export type ZmtpCommand =
  | { kind: "ready"; socketType: string; identity: Uint8Array; properties: ReadonlyMap<string, Uint8Array> }
  | { kind: "error"; reason: string }
  | { kind: "subscribe"; topic: Uint8Array }
  | { kind: "cancel"; topic: Uint8Array }
  | { kind: "ping"; ttlDs: number; context: Uint8Array }
  | { kind: "pong"; context: Uint8Array }
  | { kind: "unknown"; name: string; data: Uint8Array };

/** A decode failure: what is wrong and where inside the command body. */
export interface CommandFault {
  reason: string;
  offset: number;
}

const latin1 = new TextDecoder("latin1");
const utf8 = new TextDecoder();

/** Decodes one command frame body; returns the command or a fault. */
export function decodeCommand(body: Uint8Array): ZmtpCommand | CommandFault {
  if (body.length === 0) return { reason: "empty command frame", offset: 0 };
  const nameLen = body[0]!;
  if (nameLen === 0) return { reason: "command with an empty name", offset: 0 };
  if (1 + nameLen > body.length) return { reason: `command name of ${nameLen} bytes runs past the ${body.length}-byte frame`, offset: 0 };
  const name = latin1.decode(body.subarray(1, 1 + nameLen));
  const data = body.subarray(1 + nameLen);
  const dataOffset = 1 + nameLen;
  switch (name) {
    case CommandName.Ready:
      return decodeReady(data, dataOffset);
    case CommandName.Error: {
      if (data.length < 1) return { reason: "ERROR without a reason length", offset: dataOffset };
      const len = data[0]!;
      if (1 + len > data.length) return { reason: `ERROR reason of ${len} bytes runs past the frame`, offset: dataOffset };
      return { kind: CommandKind.Error, reason: utf8.decode(data.subarray(1, 1 + len)) };
    }
    case CommandName.Subscribe:
      return { kind: CommandKind.Subscribe, topic: data };
    case CommandName.Cancel:
      return { kind: CommandKind.Cancel, topic: data };
    case CommandName.Ping: {
      if (data.length < 2) return { reason: "PING shorter than its 2-byte TTL", offset: dataOffset };
      if (data.length > 2 + 16) return { reason: `PING context of ${data.length - 2} bytes exceeds 16`, offset: dataOffset + 2 };
      return { kind: CommandKind.Ping, ttlDs: (data[0]! << 8) | data[1]!, context: data.subarray(2) };
    }
    case CommandName.Pong:
      return { kind: CommandKind.Pong, context: data };
    default:
      return { kind: CommandKind.Unknown, name, data };
  }
}

/** READY metadata: repeated (name-len u8, name, value-len u32 BE, value). Names are case-insensitive. */
function decodeReady(data: Uint8Array, base: number): ZmtpCommand | CommandFault {
  const properties = new Map<string, Uint8Array>();
  let o = 0;
  while (o < data.length) {
    const nameLen = data[o]!;
    if (nameLen === 0) return { reason: "READY property with an empty name", offset: base + o };
    if (o + 1 + nameLen + 4 > data.length) return { reason: "READY property truncated", offset: base + o };
    const name = latin1.decode(data.subarray(o + 1, o + 1 + nameLen)).toLowerCase();
    o += 1 + nameLen;
    const valueLen = ((data[o]! << 24) | (data[o + 1]! << 16) | (data[o + 2]! << 8) | data[o + 3]!) >>> 0;
    o += 4;
    if (o + valueLen > data.length) return { reason: `READY property "${name}" value of ${valueLen} bytes runs past the frame`, offset: base + o - 4 };
    properties.set(name, data.subarray(o, o + valueLen));
    o += valueLen;
  }
  const socketType = properties.get("socket-type");
  if (!socketType) return { reason: "READY without a Socket-Type property", offset: base };
  const identity = properties.get("identity") ?? new Uint8Array(0);
  if (identity.length > MAX_IDENTITY_BYTES) return { reason: `Identity of ${identity.length} bytes exceeds ${MAX_IDENTITY_BYTES}`, offset: base };
  return { kind: CommandKind.Ready, socketType: latin1.decode(socketType), identity, properties };
}

export function isCommandFault(x: ZmtpCommand | CommandFault): x is CommandFault {
  return (x as CommandFault).reason !== undefined && (x as { kind?: string }).kind === undefined;
}

/**
 * ZMTP 3.0 subscriptions travel as one-frame messages: first byte 1 = subscribe, 0 = cancel,
 * the rest is the topic prefix. libzmq XPUB accepts them from any peer; anything else sent to a
 * publisher is not a subscription (undefined).
 */
export function decodeSubscriptionMessage(frames: readonly Uint8Array[]): { subscribe: boolean; topic: Uint8Array } | undefined {
  if (frames.length !== 1) return undefined;
  const body = frames[0]!;
  if (body.length === 0) return undefined;
  const first = body[0]!;
  if (first !== 0 && first !== 1) return undefined;
  return { subscribe: first === 1, topic: body.subarray(1) };
}
