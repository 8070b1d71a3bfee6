// ZMTP 3.1 wire constants (RFC 37/ZMTP): frame flag bits, greeting layout, command names, socket
// types and which socket types may talk to each other (the libzmq compatibility table).

/** Frame flag bits. Bits 3-7 are reserved and must be zero. */
export const FrameFlag = { More: 0x01, Long: 0x02, Command: 0x04 } as const;
export const RESERVED_FLAG_BITS = 0xf8;

export const GREETING_BYTES = 64;
/** Bytes 12..31 of the greeting hold the mechanism name, NUL-padded. */
export const MECHANISM_OFFSET = 12;
export const MECHANISM_BYTES = 20;
export const AS_SERVER_OFFSET = 32;

/** The only security mechanism kvcr-mock speaks (vLLM publishes without security). */
export const NULL_MECHANISM = "NULL";

export const CommandName = {
  Ready: "READY",
  Error: "ERROR",
  Subscribe: "SUBSCRIBE",
  Cancel: "CANCEL",
  Ping: "PING",
  Pong: "PONG",
} as const;

export const SocketType = { Pub: "PUB", Sub: "SUB", Router: "ROUTER", Dealer: "DEALER" } as const;
export type SocketType = (typeof SocketType)[keyof typeof SocketType];

/** Peer socket types each local type accepts, as libzmq's mechanism_t::check_socket_type does. */
const COMPATIBLE: Record<SocketType, readonly string[]> = {
  PUB: ["SUB", "XSUB"],
  SUB: ["PUB", "XPUB"],
  ROUTER: ["DEALER", "REQ", "ROUTER"],
  DEALER: ["REP", "DEALER", "ROUTER"],
};

export function isCompatiblePeer(local: SocketType, peer: string): boolean {
  return COMPATIBLE[local].includes(peer);
}

/** Socket types that announce an Identity property in READY (libzmq does for these). */
export function sendsIdentity(type: SocketType): boolean {
  return type === SocketType.Router || type === SocketType.Dealer;
}

/** ZMTP limits a routing identity to 255 bytes. */
export const MAX_IDENTITY_BYTES = 255;
