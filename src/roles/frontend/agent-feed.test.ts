import { afterEach, describe, expect, jest, test } from "bun:test";
import { createLogger } from "../../lib/logger.ts";
import type { AgentSnapshot } from "../../protocol/agent-snapshot.ts";
import type { AgentHostRecord } from "../../protocol/records.ts";
import { encodeRouterEvents, RouterEventKind, RouterTier, type RouterEvent } from "../../protocol/router-events.ts";
import { encodeSeq } from "../../protocol/seq-frame.ts";
import { PubSocket } from "../../transport/zmtp/index.ts";
import { cleanupList, waitFor } from "../../../test/harness.ts";
import { routingState, workerRecord } from "../../../test/routing/fake-fleet.ts";
import { AgentFeed } from "./agent-feed.ts";
import type { RoutingState } from "./routing-state.ts";
import type { FetchLike } from "./worker-call.ts";

const cleanups = cleanupList();
afterEach(() => {
  jest.useRealTimers();
});

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

// ---- Against a fake agent: a PUB for its stream, its snapshot and /health answered by fetchFn ----

const owner = `${"ab".repeat(16)}:${"cd".repeat(16)}/${"0".repeat(16)}/${"0".repeat(31)}1`;
const block = (k: number) => ({ seqHash: BigInt(1000 + k), localHash: BigInt(2000 + k) });

/** Lets pending promise callbacks run (no timer involved, so it also works under fake timers), until `cond` holds. */
async function settle(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000 && !cond(); i++) await Promise.resolve();
  if (!cond()) throw new Error(`not settled: ${what}`);
}

class FakeAgent {
  readonly pub = new PubSocket({ logger: createLogger({ level: "silent" }) });
  readonly endpoint = this.pub.bind("tcp://127.0.0.1:0");
  snapshot: AgentSnapshot = { cursor: 0, sources: [] };
  /** Answers the next snapshot request instead of `snapshot` (once). */
  nextSnapshot: (() => Promise<Response>) | undefined;
  snapshotCalls = 0;
  healthCalls = 0;
  health: () => Promise<Response> = async () => Response.json({ slots: { degraded: 0 } });
  readonly fetch: FetchLike = async (url) => {
    if (url.endsWith("/health")) {
      this.healthCalls++;
      return this.health();
    }
    this.snapshotCalls++;
    const next = this.nextSnapshot;
    this.nextSnapshot = undefined;
    return next ? next() : Response.json(this.snapshot);
  };

  record(endpoint = this.endpoint): AgentHostRecord {
    return { agent_id: "ag", http_url: "http://agent.test", router_events_endpoint: endpoint, max_slots: 4 };
  }

  publish(cursor: number, events: RouterEvent[]): void {
    this.pub.send(["", encodeSeq(BigInt(cursor)), encodeRouterEvents(events)]);
  }
}

function setUp(): { agent: FakeAgent; state: RoutingState; feed: AgentFeed; lines: string[] } {
  const agent = new FakeAgent();
  const state = routingState("kv");
  state.putWorker(workerRecord("a"));
  const lines: string[] = [];
  const stream = { write: (s: string) => (lines.push(s), true) } as unknown as NodeJS.WritableStream;
  const feed = new AgentFeed(state, createLogger({ level: "debug", stream, format: "json" }), agent.fetch);
  cleanups.push(() => agent.pub.close());
  cleanups.push(() => feed[Symbol.dispose]());
  return { agent, state, feed, lines };
}

const stored = (n: number): RouterEvent => ({ holder: { workerId: "a", dpRank: 0 }, tier: RouterTier.Device, kind: RouterEventKind.Stored, blocks: Array.from({ length: n }, (_, k) => block(k)), parentHash: null });

describe("agent feed against a fake agent", () => {
  test("the ranks an agent's stream touched are remembered: dropping the agent clears their residency", async () => {
    const { agent, state, feed } = setUp();
    feed.follow(agent.record());
    await waitFor(() => feed.liveCount() === 1 && agent.pub.subscriberCount("") > 0, { what: "the feed live on an empty snapshot" });
    agent.publish(1, [stored(3)]);
    await waitFor(() => feed.batches === 1, { what: "the stored batch applied" });
    expect(state.index.size("device")).toBe(3);
    feed.drop("ag");
    expect(state.index.size("device")).toBe(0);
  });

  test("an undecodable batch re-syncs from a fresh snapshot", async () => {
    const { agent, feed } = setUp();
    feed.follow(agent.record());
    await waitFor(() => feed.liveCount() === 1 && agent.pub.subscriberCount("") > 0, { what: "the feed live" });
    expect([agent.snapshotCalls, feed.resyncs]).toEqual([1, 0]); // the first load is no re-sync
    agent.pub.send(["", encodeSeq(1n), Uint8Array.from([0xc1, 0xc1])]);
    await waitFor(() => feed.snapshotsLoaded === 2 && feed.liveCount() === 1, { what: "a second snapshot after the bad batch" });
    expect([feed.decodeErrors, feed.resyncs, agent.snapshotCalls]).toEqual([1, 1, 2]);
  });

  test("a cursor gap re-syncs from a fresh snapshot; the batch past the gap is not applied", async () => {
    const { agent, state, feed } = setUp();
    feed.follow(agent.record());
    await waitFor(() => feed.liveCount() === 1 && agent.pub.subscriberCount("") > 0, { what: "the feed live" });
    agent.publish(2, [stored(3)]); // cursor 1 never came
    await waitFor(() => feed.snapshotsLoaded === 2 && feed.liveCount() === 1, { what: "a second snapshot after the gap" });
    expect([feed.resyncs, feed.batches, state.index.size("device")]).toEqual([1, 0, 0]);
  });

  test("an agent whose host record appears again loses its residency at once, until its new snapshot loads", async () => {
    const { agent, state, feed } = setUp();
    agent.snapshot = { cursor: 5, sources: [{ cache_owner_id: owner, worker_id: "a", dp_rank: 0, tiers: { device: [0, 1, 2, 3].map((k) => ({ seq_hash: String(block(k).seqHash), local_hash: String(block(k).localHash) })), host: [], disk: [] } }] };
    feed.follow(agent.record());
    await waitFor(() => feed.liveCount() === 1, { what: "the first snapshot loaded" });
    expect(state.index.size("device")).toBe(4);
    // The restarted agent's snapshot is slow to come.
    let answer!: (r: Response) => void;
    agent.nextSnapshot = () => new Promise<Response>((resolve) => (answer = resolve));
    feed.follow(agent.record());
    expect(feed.reappearances).toBe(1);
    expect(state.index.size("device")).toBe(0);
    expect(feed.health()).toMatchObject({ followed: 1, resyncing: 1 });
    await waitFor(() => agent.snapshotCalls === 2, { what: "the restarted agent's snapshot requested" });
    answer(Response.json(agent.snapshot));
    await waitFor(() => feed.liveCount() === 1, { what: "the new snapshot loaded" });
    expect(state.index.size("device")).toBe(4);
  });

  test("a failed snapshot load is retried after 500 ms", async () => {
    const { agent, feed, lines } = setUp();
    let fail!: (e: Error) => void;
    agent.nextSnapshot = () => new Promise<Response>((_, reject) => (fail = reject));
    feed.follow(agent.record());
    await waitFor(() => agent.snapshotCalls === 1, { what: "the first snapshot request" });
    // The retry timer is set when the load fails: the clock is driven from here.
    jest.useFakeTimers();
    fail(new Error("agent busy"));
    await settle(() => lines.some((l) => l.includes("snapshot load failed")), "the failed load logged");
    jest.advanceTimersByTime(499);
    expect(agent.snapshotCalls).toBe(1);
    jest.advanceTimersByTime(1);
    expect(agent.snapshotCalls).toBe(2);
    jest.useRealTimers();
    await waitFor(() => feed.liveCount() === 1, { what: "the retried snapshot loaded" });
  });

  test("/health is polled every second, one poll at a time: a slow answer is not overlapped", async () => {
    const { agent, feed } = setUp();
    // A stream nothing answers on, so no snapshot load polls too: only the interval does.
    const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const dead = `tcp://127.0.0.1:${listener.port}`;
    listener.stop(true);
    let answer: ((r: Response) => void) | undefined;
    agent.health = () => new Promise<Response>((resolve) => (answer = resolve));
    cleanups.push(() => answer?.(Response.json({})));
    jest.useFakeTimers();
    feed.follow(agent.record(dead));
    jest.advanceTimersByTime(999);
    expect(agent.healthCalls).toBe(0);
    jest.advanceTimersByTime(1);
    expect(agent.healthCalls).toBe(1);
    // The first poll has not answered: the next tick does not start another.
    jest.advanceTimersByTime(1000);
    expect(agent.healthCalls).toBe(1);
    answer!(Response.json({ slots: { degraded: 2 } }));
    await settle(() => feed.health().degraded_slots === 2, "the first poll's answer");
    // Its finally() (the poll done) runs a few promise turns after the count is set.
    for (let i = 0; i < 10; i++) await Promise.resolve();
    jest.advanceTimersByTime(1000);
    expect(agent.healthCalls).toBe(2);
  });
});
