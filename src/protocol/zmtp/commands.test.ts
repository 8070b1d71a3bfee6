// ZMTP command bodies built byte by byte (name length, name, data) and what decodeCommand makes of them.
import { describe, expect, test } from "bun:test";
import { decodeCommand } from "./commands.ts";

const te = new TextEncoder();
const command = (name: string, ...data: number[][]) => Uint8Array.from([name.length, ...te.encode(name), ...data.flat()]);
const u32 = (n: number) => [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
const reasonOf = (body: Uint8Array) => {
  const c = decodeCommand(body);
  return "reason" in c ? c.reason : undefined;
};

describe("decodeCommand", () => {
  test("a name that runs past the frame by one byte is a fault", () => {
    expect(reasonOf(Uint8Array.of(4, 80, 73, 78))).toBe("command name of 4 bytes runs past the 4-byte frame");
    expect(decodeCommand(Uint8Array.of(4, 80, 73, 78, 71, 0, 1))).toMatchObject({ ttlDs: 1 });
  });

  test("PING: a context of up to 16 bytes", () => {
    expect(decodeCommand(command("PING", [0, 10], new Array(16).fill(7)))).toMatchObject({ ttlDs: 10, context: new Uint8Array(16).fill(7) });
    expect(reasonOf(command("PING", [0, 10], new Array(17).fill(7)))).toBe("PING context of 17 bytes exceeds 16");
  });

  test("READY: a value length is 4 big-endian bytes, each one counted; a property cut inside them is truncated", () => {
    const value = new Array(65_536 + 256 + 3).fill(1);
    const ready = decodeCommand(command("READY", [11], [...te.encode("Socket-Type")], u32(3), [...te.encode("SUB")], [6], [...te.encode("X-Meta")], u32(value.length), value));
    expect("properties" in ready && ready.properties.get("x-meta")?.length).toBe(65_795);
    expect(reasonOf(command("READY", [1, 97], [0, 0]))).toBe("READY property truncated");
    expect(reasonOf(command("READY", [1, 97], [0, 0, 0]))).toBe("READY property truncated");
  });
});
