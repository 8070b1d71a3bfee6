// Subscribers that attack a PUB through its subscriptions, written byte by byte (no ZMTP library:
// test/hostile-zmtp.ts): too many prefixes, a prefix of megabytes, a socket's total passed by many
// peers. Each is dropped and counted while a well-behaved subscriber keeps receiving.
import { describe, expect, test } from "bun:test";
import { waitFor, withTimeout } from "../../../test/harness.ts";
import { PubSocket, type PubSocketOptions } from "./pub-socket.ts";
import { SubSocket } from "./sub-socket.ts";
import { createLogger } from "../../lib/logger.ts";
import { command, hostileSub, join } from "../../../test/hostile-zmtp.ts";

const te = new TextEncoder();

async function pubWithHealthySub(opts: PubSocketOptions = {}) {
  const pub = new PubSocket({ logger: createLogger({ tag: "test", level: "silent" }), ...opts });
  const ep = pub.bind("tcp://127.0.0.1:0");
  const sub = new SubSocket({ logger: createLogger({ tag: "test", level: "silent" }) });
  sub.subscribe("kv");
  sub.connect(ep);
  await waitFor(() => pub.subscriberCount("kv") === 1, { timeoutMs: 5000, what: "the healthy subscriber" });
  return {
    pub,
    ep,
    async healthyStillWorks() {
      pub.send(["kv", "still-alive"]);
      const m = await withTimeout(sub.receive(), 5000, "a message on the healthy SUB");
      expect(new TextDecoder().decode(m[1]!)).toBe("still-alive");
    },
    [Symbol.dispose]() {
      sub.close();
      pub.close();
    },
  };
}

describe("a PUB bounds what subscribers may hold", () => {
  test("100,000 subscriptions then 1,500 cancels: the peer is dropped at the per-peer bound, counted, nothing held", async () => {
    using env = await pubWithHealthySub();
    using raw = await hostileSub(env.ep);
    const subs = Array.from({ length: 100_000 }, (_, i) => command("SUBSCRIBE", te.encode(`t${i}`)));
    const cancels = Array.from({ length: 1_500 }, (_, i) => command("CANCEL", te.encode(`t${i}`)));
    raw.send(join([...subs, ...cancels]));
    await waitFor(raw.isClosed, { timeoutMs: 5000, what: "the hostile subscriber to be dropped" });
    expect(env.pub.peersOverSubscriptionLimits).toBe(1);
    expect(env.pub.peerCount).toBe(1);
    expect(env.pub.subscriptionBytes).toBe(2); // the healthy subscriber's "kv"
    await env.healthyStillWorks();
  });

  test("subscriptions up to the bound are kept and matched; cancelling them all returns the memory", async () => {
    using env = await pubWithHealthySub({ subscriptionLimits: { maxSubscriptionsPerPeer: 50 } });
    using raw = await hostileSub(env.ep);
    raw.send(join(Array.from({ length: 50 }, (_, i) => command("SUBSCRIBE", te.encode(`p${i}`)))));
    await waitFor(() => env.pub.subscriberCount("p49x") === 1, { timeoutMs: 5000, what: "the 50 subscriptions" });
    expect(env.pub.subscriptionBytes).toBe(2 + 50 * 2 + 40);
    raw.send(join(Array.from({ length: 50 }, (_, i) => command("CANCEL", te.encode(`p${i}`)))));
    await waitFor(() => env.pub.subscriptionBytes === 2, { timeoutMs: 5000, what: "the cancels" });
    expect(raw.isClosed()).toBe(false);
    expect(env.pub.peersOverSubscriptionLimits).toBe(0);
  });

  test("a 15 MiB subscription is refused from its frame header, before its bytes arrive", async () => {
    using env = await pubWithHealthySub();
    using raw = await hostileSub(env.ep);
    const head = new Uint8Array(9);
    head[0] = 0x06;
    new DataView(head.buffer).setBigUint64(1, BigInt(15 * 1024 * 1024));
    raw.send(join([head, new Uint8Array([9]), te.encode("SUBSCRIBE"), new Uint8Array(1000)]));
    await waitFor(raw.isClosed, { timeoutMs: 5000, what: "the hostile subscriber to be dropped" });
    expect(env.pub.peersOverSubscriptionLimits).toBe(1);
    await env.healthyStillWorks();
  });

  test("a prefix over the length bound is refused (ZMTP 3.0 message form too)", async () => {
    using env = await pubWithHealthySub({ subscriptionLimits: { maxSubscriptionBytes: 8 } });
    using a = await hostileSub(env.ep);
    a.send(command("SUBSCRIBE", te.encode("123456789")));
    await waitFor(a.isClosed, { timeoutMs: 5000, what: "the long SUBSCRIBE to be refused" });
    using m = await hostileSub(env.ep);
    m.send(new Uint8Array([0x00, 10, 1, ...te.encode("123456789")])); // message form: 1 = subscribe
    await waitFor(m.isClosed, { timeoutMs: 5000, what: "the long subscription message to be refused" });
    expect(env.pub.peersOverSubscriptionLimits).toBe(2);
    await env.healthyStillWorks();
  });

  test("many peers together cannot pass the socket's total: the peer that would is dropped", async () => {
    using env = await pubWithHealthySub({ subscriptionLimits: { maxSubscriptionBytesTotal: 200 } });
    using a = await hostileSub(env.ep);
    a.send(join(Array.from({ length: 9 }, (_, i) => command("SUBSCRIBE", te.encode(`${i}`.padEnd(20, "a"))))));
    await waitFor(() => env.pub.subscriptionBytes === 2 + 180, { timeoutMs: 5000, what: "the first peer's prefixes" });
    using b = await hostileSub(env.ep);
    b.send(command("SUBSCRIBE", te.encode("b".repeat(20))));
    await waitFor(b.isClosed, { timeoutMs: 5000, what: "the peer past the total to be dropped" });
    expect(a.isClosed()).toBe(false);
    expect(env.pub.peersOverSubscriptionLimits).toBe(1);
    await env.healthyStillWorks();
  });
});
