// A ZMTP 3.1 subscriber written byte by byte (no ZMTP library, ours included), for tests and the
// chaos bench that attack publishers: greeting, READY as SUB, then whatever commands the caller sends.
import type { Socket } from "bun";

const te = new TextEncoder();

export function greeting(): Uint8Array {
  const g = new Uint8Array(64);
  g.set([0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 3, 1]);
  g.set(te.encode("NULL"), 12);
  return g;
}
/** A command frame: flag 0x04 (short) or 0x06 (long), size, name length, name, data. */
export function command(name: string, data: Uint8Array): Uint8Array {
  const body = new Uint8Array(1 + name.length + data.length);
  body[0] = name.length;
  body.set(te.encode(name), 1);
  body.set(data, 1 + name.length);
  const long = body.length > 255;
  const head = long ? new Uint8Array(9) : new Uint8Array(2);
  head[0] = long ? 0x06 : 0x04;
  if (long) new DataView(head.buffer).setBigUint64(1, BigInt(body.length));
  else head[1] = body.length;
  return join([head, body]);
}
export function ready(): Uint8Array {
  const name = te.encode("Socket-Type");
  const value = te.encode("SUB");
  const props = new Uint8Array(1 + name.length + 4 + value.length);
  props[0] = name.length;
  props.set(name, 1);
  new DataView(props.buffer).setUint32(1 + name.length, value.length);
  props.set(value, 5 + name.length);
  return command("READY", props);
}
export function join(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) (out.set(p, at), (at += p.length));
  return out;
}

export async function hostileSub(endpoint: string) {
  let closed = false;
  const socket: Socket<undefined> = await Bun.connect({
    hostname: "127.0.0.1",
    port: Number(endpoint.split(":").at(-1)),
    socket: { data() {}, close: () => void (closed = true), drain() {} },
  });
  socket.write(join([greeting(), ready()]));
  return { send: (bytes: Uint8Array) => socket.write(bytes), isClosed: () => closed, [Symbol.dispose]: () => socket.end() };
}

