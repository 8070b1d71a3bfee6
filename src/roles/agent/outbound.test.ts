// The agent's outbound router-event PUB: vLLM's send HWM, and disposal that releases its port.
import { describe, expect, test } from "bun:test";
import { createLogger } from "../../lib/logger.ts";
import { OUTBOUND_SEND_HWM, RouterEventOutbound } from "./outbound.ts";

const logger = createLogger({ level: "silent" });

describe("RouterEventOutbound", () => {
  test("the send HWM per subscriber is vLLM's 100000", () => {
    expect(OUTBOUND_SEND_HWM).toBe(100_000);
  });

  test("disposing it closes the PUB: its port can be bound again", async () => {
    const first = new RouterEventOutbound("127.0.0.1", 0, logger);
    const port = first.port;
    expect(first.endpoint).toBe(`tcp://127.0.0.1:${port}`);
    await first[Symbol.asyncDispose]();
    const again = new RouterEventOutbound("127.0.0.1", port, logger);
    expect(again.port).toBe(port);
    await again[Symbol.asyncDispose]();
  });

  test("a port in use is an error at construction", async () => {
    await using first = new RouterEventOutbound("127.0.0.1", 0, logger);
    expect(() => new RouterEventOutbound("127.0.0.1", first.port, logger)).toThrow();
  });
});
