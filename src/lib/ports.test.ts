import { describe, expect, test } from "bun:test";
import { reserveLoopbackPort, reserveLoopbackPorts } from "./ports.ts";

describe("loopback port reservation", () => {
  test("returns a released port that can be bound right after", async () => {
    const port = await reserveLoopbackPort();
    expect(port).toBeGreaterThan(0);
    expect(port).toBeLessThan(65536);
    const server = Bun.listen({ hostname: "127.0.0.1", port, socket: { data() {} } });
    try {
      expect(server.port).toBe(port);
    } finally {
      server.stop(true);
    }
  });

  test("reserves distinct ports in one call", async () => {
    const ports = await reserveLoopbackPorts(16);
    expect(new Set(ports).size).toBe(16);
    expect(await reserveLoopbackPorts(0)).toEqual([]);
  });

  test("bad input and unbindable hosts are clear errors", async () => {
    await expect(reserveLoopbackPorts(-1)).rejects.toThrow(/count must be a non-negative integer/);
    // 192.0.2.1 (TEST-NET-1) is never a local address, so binding it fails without any traffic.
    await expect(reserveLoopbackPort("192.0.2.1")).rejects.toThrow(/cannot bind a free TCP port on 192\.0\.2\.1/);
  });
});
