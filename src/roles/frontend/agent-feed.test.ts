import { expect, test } from "bun:test";
import { createLogger } from "../../lib/logger.ts";
import { AgentFeed } from "./agent-feed.ts";
import type { RoutingState } from "./routing-state.ts";

test("an agent dropped before its stream ever connected leaves no unhandled rejection", async () => {
  // A port nothing listens on: the SUB keeps retrying, as it does while a stalled agent's host
  // record is still live. Then the record lapses and the follow is dropped.
  const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = listener.port;
  listener.stop(true);
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => void unhandled.push(reason);
  process.on("unhandledRejection", onUnhandled);
  const feed = new AgentFeed({} as RoutingState, createLogger({ tag: "test", level: "error" }), fetch);
  try {
    feed.follow({ agent_id: "a1", http_url: `http://127.0.0.1:${port}`, router_events_endpoint: `tcp://127.0.0.1:${port}`, max_slots: 1 });
    feed.drop("a1");
    // Rejections are reported after the microtask queue drains; two macrotask turns cover it.
    for (let i = 0; i < 2; i++) await new Promise((r) => setTimeout(r, 0));
    expect(unhandled).toEqual([]);
  } finally {
    feed[Symbol.dispose]();
    process.off("unhandledRejection", onUnhandled);
  }
});
