// The frontend's routing state: the shared decision table through router events, candidates per
// (worker, rank), modes as named, refusal of another block size, vanishing workers, and hints.
import { describe, expect, test } from "bun:test";
import { ROUTING_CASES, TABLE_BLOCK_SIZE } from "../../../test/routing/decision-table.ts";
import { routingState, workerRecord } from "../../../test/routing/fake-fleet.ts";
import { createBlockHasher } from "../../lib/xxh3.ts";
import type { RouterEvent } from "../../protocol/router-events.ts";
import type { RoutePlan } from "./route-plan.ts";

const hasher = createBlockHasher();
const tokens = Array.from({ length: 16 * TABLE_BLOCK_SIZE }, (_, i) => 1000 + i);
const seq = hasher.hashBlocks(tokens, TABLE_BLOCK_SIZE);

function stored(workerId: string, dpRank: number, tier: RouterEvent["tier"], from: number, to: number): RouterEvent {
  const blocks = [];
  for (let i = from; i < to; i++) blocks.push({ seqHash: seq.sequence[i]!, localHash: seq.local[i]! });
  return { holder: { workerId, dpRank }, tier, kind: "stored", blocks, parentHash: from > 0 ? seq.sequence[from - 1]! : null };
}

const plan = (p: ReturnType<ReturnType<typeof routingState>["route"]>): RoutePlan => {
  if ("status" in p) throw new Error(p.message);
  return p;
};

describe("the shared decision table through the frontend's router-event path", () => {
  for (const c of ROUTING_CASES) {
    test(c.name, () => {
      const state = routingState("kv");
      for (let w = 0; w < c.workers; w++) state.putWorker(workerRecord(`w${w}`, { worker_index: w, data_parallel_size: c.ranks }));
      state.apply(c.holdings.map((h) => stored(`w${h.worker}`, h.rank, h.tier, h.from, h.to)));
      const p = plan(state.route("m", tokens.slice(0, c.promptBlocks * TABLE_BLOCK_SIZE)));
      expect({ worker: p.worker.record.worker_index, rank: p.dpRank }).toEqual(c.expect);
    });
  }
});

describe("routing state", () => {
  test("round-robin cycles over every (worker, rank)", () => {
    const rr = routingState("round-robin");
    rr.putWorker(workerRecord("a", { data_parallel_size: 2 }));
    rr.putWorker(workerRecord("b"));
    const picks = Array.from({ length: 6 }, () => {
      const p = plan(rr.route("m", [1, 2, 3]));
      return `${p.worker.id}/${p.dpRank}`;
    });
    expect(new Set(picks.slice(0, 3))).toEqual(new Set(["a/0", "a/1", "b/0"]));
    expect(picks.slice(3)).toEqual(picks.slice(0, 3));
  });

  test("random reaches every (worker, rank)", () => {
    const rnd = routingState("random");
    rnd.putWorker(workerRecord("a", { data_parallel_size: 2 }));
    rnd.putWorker(workerRecord("b"));
    const seen = new Set(Array.from({ length: 60 }, () => {
      const p = plan(rnd.route("m", [1]));
      return `${p.worker.id}/${p.dpRank}`;
    }));
    expect(seen).toEqual(new Set(["a/0", "a/1", "b/0"]));
  });

  /** kv mode, workers a and b, b holding the prompt's 8 blocks, one request routed. */
  function routedToHolder() {
    const state = routingState("kv");
    state.putWorker(workerRecord("a"));
    state.putWorker(workerRecord("b"));
    state.apply([stored("b", 0, "device", 0, 8)]);
    return { state, p: plan(state.route("m", tokens.slice(0, 32))) };
  }

  test("kv: a request sharing a prefix follows its holder", () => {
    const { p } = routedToHolder();
    expect(p.worker.id).toBe("b");
    expect(p.decision).toMatchObject({ deviceOverlap: 8, prefillBlocks: 0, activeBlocks: 0, newBlocks: 8, cost: 8 });
  });

  test("kv: a routed request's blocks count as load until finish frees them", () => {
    const { state, p } = routedToHolder();
    expect(state.routerOf("m")!.activeBlocksOf(p.rankId)).toBe(8);
    state.finish(p);
    expect(state.routerOf("m")!.activeBlocksOf(p.rankId)).toBe(0);
  });

  test("with no worker a request gets 503", () => {
    const state = routingState("kv", { blockSize: 4 });
    expect(state.route("m", [1])).toMatchObject({ status: 503 });
  });

  test("a worker with another block size is refused, naming it", () => {
    const state = routingState("kv", { blockSize: 4 });
    expect(state.putWorker(workerRecord("odd", { block_size: 16 }))).toContain("worker odd has block size 16");
    expect(state.workerCount).toBe(0);
  });

  test("a request for an unknown model gets 404", () => {
    const state = routingState("kv", { blockSize: 4 });
    state.putWorker(workerRecord("ok"));
    expect(state.route("other", [1])).toMatchObject({ status: 404, code: "model_not_found" });
  });

  test("a vanished worker leaves routing and the index at once, and its in-flight requests are aborted", () => {
    const state = routingState("kv");
    state.putWorker(workerRecord("a"));
    state.putWorker(workerRecord("b"));
    state.apply([stored("a", 0, "device", 0, 8)]);
    const inflight = new AbortController();
    plan(state.route("m", tokens.slice(0, 32))).worker.inflight.add(inflight);
    state.removeWorker("a");
    expect(inflight.signal.aborted).toBe(true);
    expect(String(inflight.signal.reason)).toContain("worker a left");
    expect(state.index.size("device")).toBe(0);
    for (let i = 0; i < 5; i++) expect(plan(state.route("m", tokens.slice(0, 32))).worker.id).toBe("b");
  });

  test("a stored event chaining from a block its rank does not hold is dropped and counted", () => {
    const state = routingState("kv");
    state.putWorker(workerRecord("a"));
    state.apply([stored("a", 0, "device", 4, 8)]); // blocks 4..7, parent block 3: never stored
    expect([state.index.size("device"), state.index.orphanStores]).toEqual([0, 1]);
    state.apply([stored("a", 0, "device", 0, 4), stored("a", 0, "device", 4, 8)]);
    expect([state.index.size("device"), state.index.orphanStores]).toEqual([8, 1]);
  });

  test("CacheOwner residency maps to its (worker, rank) through the worker record", () => {
    const owner = `${"a".repeat(32)}:${"b".repeat(32)}/${"c".repeat(16)}/${"0".repeat(31)}1`;
    const state = routingState("kv");
    state.putWorker(workerRecord("a", { data_parallel_size: 2, cache_owner_ids: [owner.replace(/1$/, "0"), owner] }));
    state.apply([{ ...stored("x", 0, "host", 0, 8), holder: { cacheOwnerId: owner } }]);
    const p = plan(state.route("m", tokens.slice(0, 32)));
    expect([p.worker.id, p.dpRank, p.decision.hostOverlap]).toEqual(["a", 1, 8]);
    state.apply([{ ...stored("x", 0, "host", 0, 1), holder: { cacheOwnerId: "unknown" } }]);
    expect(state.unmappedEvents).toBe(1);
  });

  test("CacheOwner residency maps to its (worker, rank) through an agent's mapping too", () => {
    const owner = `${"a".repeat(32)}:${"b".repeat(32)}/${"c".repeat(16)}/${"0".repeat(31)}7`;
    const state = routingState("kv");
    state.putWorker(workerRecord("a", { data_parallel_size: 2 }));
    state.mapOwner(owner, "a", 1);
    state.apply([{ ...stored("x", 0, "host", 0, 8), holder: { cacheOwnerId: owner } }]);
    expect(state.unmappedEvents).toBe(0);
    const p = plan(state.route("m", tokens.slice(0, 32)));
    expect([p.worker.id, p.dpRank, p.decision.hostOverlap]).toEqual(["a", 1, 8]);
  });
});

describe("router hints", () => {
  const owner = (n: number) => `${"a".repeat(32)}:${"b".repeat(32)}/${"c".repeat(16)}/${n.toString(16).padStart(32, "0")}`;
  const hinting = (id: string, n: number, domain?: string) =>
    workerRecord(id, {
      capabilities: ["generate", "router_hint"],
      cache_owner_ids: [owner(n)],
      router_hint_sources: [{ cache_owner_id: owner(n), source_control_endpoint: `tcp://127.0.0.1:${7000 + n}` }],
      ...(domain ? { kv_transfer_domain: domain } : {}),
    });

  test("attached exactly when a hint holder in the same domain holds a strictly longer prefix", () => {
    const state = routingState("round-robin");
    state.putWorker(hinting("a", 1, "d0"));
    state.putWorker(hinting("b", 2, "d0"));
    state.putWorker(hinting("c", 3, "d1"));
    state.apply([stored("a", 0, "device", 0, 2), stored("a", 0, "host", 2, 6), stored("c", 0, "device", 0, 8)]);
    const byWorker = new Map<string, RoutePlan>();
    for (let i = 0; i < 3; i++) {
      const p = plan(state.route("m", tokens.slice(0, 32)));
      byWorker.set(p.worker.id, p);
    }
    // b (nothing) gets a hint to a (device 2 + host 4 = 6 blocks); c is in another domain.
    const hint = byWorker.get("b")!.kvHint!;
    expect(hint).toMatchObject({ protocol_version: "0.1", actions: [{ action_type: "kv.fetch", action_version: "1.0", payload: { source_control_endpoint: "tcp://127.0.0.1:7001" } }] });
    expect(hint.actions[0]!.payload.block_hashes).toEqual([...seq.sequence.subarray(0, 6)].map(String));
    expect(byWorker.get("a")!.kvHint).toBeUndefined(); // it holds the longest prefix of its domain
    expect(byWorker.get("c")!.kvHint).toBeUndefined(); // alone in d1
  });

  test("no hint for an equal prefix, nor from a worker without router_hint", () => {
    const state = routingState("round-robin");
    state.putWorker(hinting("a", 1));
    state.putWorker(hinting("b", 2));
    state.putWorker(workerRecord("plain"));
    state.apply([stored("a", 0, "device", 0, 4), stored("b", 0, "device", 0, 4), stored("plain", 0, "device", 0, 8)]);
    for (let i = 0; i < 3; i++) expect(plan(state.route("m", tokens.slice(0, 32))).kvHint).toBeUndefined();
  });
});
