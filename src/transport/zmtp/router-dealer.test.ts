import { describe, expect, test } from "bun:test";
import { createLogger } from "../../lib/logger.ts";
import { waitFor, withTimeout } from "../../../test/harness.ts";
import { DealerSocket } from "./dealer-socket.ts";
import { RouterSocket } from "./router-socket.ts";

const logger = createLogger({ level: "silent" });
const td = new TextDecoder();
const strs = (m: Uint8Array[]) => m.map((f) => td.decode(f));
const recv = (s: RouterSocket | DealerSocket) => withTimeout(s.receive(), 5000, "a message").then(strs);

describe("ROUTER/DEALER between kvcr-mock sockets", () => {
  test("a request reaches the ROUTER behind its identity and an empty delimiter, and the reply is routed back by it", async () => {
    using router = new RouterSocket({ logger });
    const ep = router.bind("tcp://127.0.0.1:0");
    using dealer = new DealerSocket({ logger, identity: "w1" });
    dealer.connect(ep);
    dealer.send(["", "req"]);
    expect(await recv(router)).toEqual(["w1", "", "req"]);
    expect(router.send(["w1", "", "rep"])).toBe(true);
    expect(await recv(dealer)).toEqual(["", "rep"]);
  });

  test("unknown identities are dropped and counted", async () => {
    using router = new RouterSocket({ logger });
    router.bind("tcp://127.0.0.1:0");
    expect(router.send(["nobody", "", "x"])).toBe(false);
    expect(router.unroutableMessages).toBe(1);
    expect(router.stats().messagesDropped).toBe(1);
  });

  test("DEALER sends round-robin over its peers", async () => {
    const routers = [new RouterSocket({ logger }), new RouterSocket({ logger }), new RouterSocket({ logger })];
    using dealer = new DealerSocket({ logger });
    try {
      for (const r of routers) dealer.connect(r.bind("tcp://127.0.0.1:0"));
      await waitFor(() => dealer.peerCount === 3, { timeoutMs: 5000, what: "three connections" });
      for (let i = 0; i < 9; i++) dealer.send([String(i)]);
      const perRouter = await Promise.all(routers.map(async (r) => [(await recv(r))[1], (await recv(r))[1], (await recv(r))[1]]));
      expect(perRouter.flat().sort()).toEqual(["0", "1", "2", "3", "4", "5", "6", "7", "8"]);
      // Each router got every third message.
      for (const got of perRouter) expect(got.map(Number).map((n) => n % 3)).toEqual(Array(3).fill(Number(got[0]) % 3));
    } finally {
      for (const r of routers) r.close();
    }
  });

  /** Connects the three dealers to `ep` and waits until the router sees them. */
  async function connectThree(router: RouterSocket, ep: string, dealers: DealerSocket[]): Promise<void> {
    for (const d of dealers) d.connect(ep);
    await waitFor(() => router.peerCount === 3, { timeoutMs: 5000, what: "three dealers" });
  }

  test("ROUTER fair-queues receives across peers", async () => {
    using router = new RouterSocket({ logger });
    const ep = router.bind("tcp://127.0.0.1:0");
    const dealers = [new DealerSocket({ logger }), new DealerSocket({ logger }), new DealerSocket({ logger })];
    try {
      await connectThree(router, ep, dealers);
      dealers.forEach((d, i) => {
        for (let k = 0; k < 40; k++) d.send([`d${i}`, String(k)]);
      });
      await waitFor(() => router.stats().messagesReceived === 120, { timeoutMs: 5000, what: "all messages queued" });
      const first = await Promise.all([recv(router), recv(router), recv(router)]);
      expect(new Set(first.map((m) => m[1]))).toEqual(new Set(["d0", "d1", "d2"]));
    } finally {
      for (const d of dealers) d.close();
    }
  });

  test("generated peer identities are distinct", async () => {
    using router = new RouterSocket({ logger });
    const ep = router.bind("tcp://127.0.0.1:0");
    const dealers = [new DealerSocket({ logger }), new DealerSocket({ logger }), new DealerSocket({ logger })];
    try {
      await connectThree(router, ep, dealers);
      const ids = router.peerIdentities().map((id) => Buffer.from(id).toString("hex"));
      expect(new Set(ids).size).toBe(3);
      for (const id of ids) expect(id).toMatch(/^00[0-9a-f]{8}$/);
    } finally {
      for (const d of dealers) d.close();
    }
  });

  test("a second peer with a taken identity is refused while the first keeps working", async () => {
    using router = new RouterSocket({ logger });
    const ep = router.bind("tcp://127.0.0.1:0");
    using a = new DealerSocket({ logger, identity: "same" });
    a.connect(ep);
    await waitFor(() => router.peerCount === 1, { timeoutMs: 5000, what: "the first dealer" });
    using b = new DealerSocket({ logger, identity: "same", reconnectIntervalMs: 1000 });
    b.connect(ep);
    await waitFor(() => router.stats().peerErrors >= 1, { timeoutMs: 5000, what: "the duplicate to be refused" });
    expect(router.peerCount).toBe(1);
    a.send(["", "from-a"]);
    expect(await recv(router)).toEqual(["same", "", "from-a"]);
    router.send(["same", "", "to-a"]);
    expect(await recv(a)).toEqual(["", "to-a"]);
  });

  test("ROUTER connects to a bound DEALER", async () => {
    using dealer = new DealerSocket({ logger, identity: "bound" });
    const ep = dealer.bind("tcp://127.0.0.1:0");
    using router = new RouterSocket({ logger });
    router.connect(ep);
    await waitFor(() => router.peerCount === 1, { timeoutMs: 5000, what: "the connection" });
    expect(router.send(["bound", "", "hi"])).toBe(true);
    expect(await recv(dealer)).toEqual(["", "hi"]);
  });

  test("DEALER holds messages (up to its HWM) until a peer appears", async () => {
    using dealer = new DealerSocket({ logger, sendHighWaterMark: 3, reconnectIntervalMs: 10 });
    const results = [1, 2, 3, 4].map((i) => dealer.send([String(i)]));
    expect(results).toEqual([true, true, true, false]);
    expect(dealer.stats()).toMatchObject({ queuedMessages: 3, messagesDropped: 1 });
    using router = new RouterSocket({ logger });
    dealer.connect(router.bind("tcp://127.0.0.1:0"));
    expect([(await recv(router))[1], (await recv(router))[1], (await recv(router))[1]]).toEqual(["1", "2", "3"]);
  });

  test("DEALER with sendHighWaterMark 0 (no limit) holds every message until a peer appears", async () => {
    using dealer = new DealerSocket({ logger, sendHighWaterMark: 0, reconnectIntervalMs: 10 });
    const n = 1500;
    for (let i = 0; i < n; i++) expect(dealer.send([String(i)])).toBe(true);
    expect(dealer.stats()).toMatchObject({ queuedMessages: n, messagesDropped: 0 });
    using router = new RouterSocket({ logger });
    dealer.connect(router.bind("tcp://127.0.0.1:0"));
    const got: string[] = [];
    for (let i = 0; i < n; i++) got.push((await recv(router))[1]!);
    expect(got).toEqual(Array.from({ length: n }, (_, i) => String(i)));
  });

  test("identity longer than 255 bytes is refused", () => {
    expect(() => new DealerSocket({ identity: "x".repeat(256) })).toThrow(/exceeds 255/);
  });
});
