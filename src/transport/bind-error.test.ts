import { describe, expect, test } from "bun:test";
import { serveHttp } from "./http/server.ts";
import { holdPort } from "./port-hold.ts";

describe("a listen that failed says why, once", () => {
  test("HTTP on a port in use: one sentence naming the port, no doubled question", async () => {
    const held = holdPort("127.0.0.1");
    try {
      let message = "";
      try {
        serveHttp({ host: "127.0.0.1", port: held.port, fetch: () => new Response("") });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toBe(
        `cannot serve HTTP on 127.0.0.1:${held.port}: port ${held.port} is in use (another process, or another socket of this one, holds it); choose another port, or 0 to let the OS pick`,
      );
      expect(message.match(/\?/g)).toBeNull();
    } finally {
      held.close();
    }
  });

  test("an address that is not this machine's is not called a port problem", () => {
    // 192.0.2.0/24 is TEST-NET-1 (RFC 5737): never assigned to a real interface.
    expect(() => serveHttp({ host: "192.0.2.1", port: 0, fetch: () => new Response("") })).toThrow(
      "cannot serve HTTP on 192.0.2.1:0: 192.0.2.1 is not an address of this machine",
    );
    expect(() => holdPort("192.0.2.1")).toThrow(/192\.0\.2\.1 is not an address of this machine/);
  });
});
