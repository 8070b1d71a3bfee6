// LoRA adapters in the frontend's routing: an adapter is a model of its own under its base model,
// hashed with the adapter's seed (the independent vectors), narrowed to the workers holding it while
// any routable one does (none → all), and forwarded as lora_name; unknown names are 404s.
import { describe, expect, test } from "bun:test";
import vectors from "../../../test/fixtures/lora-vectors.json";
import { TABLE_BLOCK_SIZE } from "../../../test/routing/decision-table.ts";
import { routingState, workerRecord } from "../../../test/routing/fake-fleet.ts";
import { createBlockHasher } from "../../lib/xxh3.ts";
import type { RouterEvent } from "../../protocol/router-events.ts";
import type { RoutePlan } from "./route-plan.ts";

const hasher = createBlockHasher();
const tokens = Array.from({ length: 8 * TABLE_BLOCK_SIZE }, (_, i) => 1000 + i);
const plan = (p: RoutePlan | { status: number; message: string }): RoutePlan => {
  if ("status" in p) throw new Error(p.message);
  return p;
};
function stored(workerId: string, loraName: string | null, blocks = 8): RouterEvent {
  const h = hasher.hashBlocks(tokens.slice(0, blocks * TABLE_BLOCK_SIZE), TABLE_BLOCK_SIZE, undefined, hasher.seedOf(loraName));
  return { holder: { workerId, dpRank: 0 }, tier: "device", kind: "stored", blocks: [...h.sequence].map((s, i) => ({ seqHash: s, localHash: h.local[i]! })), parentHash: null };
}
/** Four workers of model m; w1 and w2 hold adapter-a, w3 holds adapter-b. */
function fleet(mode: "kv" | "round-robin" = "kv") {
  const state = routingState(mode);
  state.putWorker(workerRecord("w0", { worker_index: 0 }));
  state.putWorker(workerRecord("w1", { worker_index: 1, lora_adapters: ["adapter-a"] }));
  state.putWorker(workerRecord("w2", { worker_index: 2, lora_adapters: ["adapter-a"] }));
  state.putWorker(workerRecord("w3", { worker_index: 3, lora_adapters: ["adapter-b"] }));
  return state;
}

describe("routing under LoRA adapters", () => {
  test("the router's hashes for an adapter equal the independent vectors", () => {
    for (const c of vectors.cases) {
      expect([...hasher.sequenceHashes(c.tokens, c.block_size, undefined, hasher.seedOf(c.lora_name))].map(String)).toEqual(c.sequence_hashes);
    }
    // And the routing state finds blocks stored under exactly those hashes.
    const state = routingState("kv");
    state.putWorker(workerRecord("x", { block_size: 16, lora_adapters: ["adapter-a"] }));
    state.putWorker(workerRecord("y", { block_size: 16, lora_adapters: ["adapter-a"] }));
    const c = vectors.cases.find((k) => k.lora_name === "adapter-a")!;
    state.apply([{ holder: { workerId: "y", dpRank: 0 }, tier: "device", kind: "stored", blocks: c.sequence_hashes.map((s, i) => ({ seqHash: BigInt(s), localHash: BigInt(c.local_hashes[i]!) })), parentHash: null }]);
    const p = plan(state.route("adapter-a", c.tokens));
    expect(p.worker.id).toBe("y");
    expect(p.decision.deviceOverlap).toBe(2);
  });

  test("requests for an adapter reach only the workers that hold it, every mode", () => {
    for (const mode of ["kv", "round-robin"] as const) {
      const state = fleet(mode);
      const seen = new Set(Array.from({ length: 12 }, () => plan(state.route("adapter-a", tokens)).worker.id));
      expect(seen).toEqual(new Set(["w1", "w2"]));
      expect(plan(state.route("adapter-b", tokens)).worker.id).toBe("w3");
      expect(plan(state.route("adapter-a", tokens)).loraName).toBe("adapter-a");
      expect(plan(state.route("m", tokens)).loraName).toBeUndefined();
    }
  });

  test("an adapter's prefix is its own: blocks of the same prompt under the base model or another adapter do not count", () => {
    const state = fleet();
    state.apply([stored("w1", null), stored("w2", "adapter-a")]);
    const p = plan(state.route("adapter-a", tokens));
    expect(p.worker.id).toBe("w2");
    expect(p.decision.deviceOverlap).toBe(8);
    const q = plan(state.route("adapter-b", tokens));
    expect(q.decision.deviceOverlap).toBe(0);
    state.apply([stored("w0", null, 8)]);
    expect(plan(state.route("m", tokens)).decision.deviceOverlap).toBe(8);
  });

  test("an adapter whose only holder is ejected is still a model (it is expected back)", () => {
    const state = fleet();
    expect(state.reportFailure("w3", true)).toBe(true); // down: ejected at once
    expect(new Set(state.models())).toEqual(new Set(["m", "adapter-a", "adapter-b"]));
  });

  test("none of the holders left to try → every worker of the base model (Dynamo: none → all)", () => {
    const state = fleet();
    const p = plan(state.route("adapter-b", tokens, new Set(["w3"])));
    expect(["w0", "w1", "w2"]).toContain(p.worker.id);
  });

  test("models list adapters with their parent; an unknown name is a 404 in vLLM's words; unloading updates routing", () => {
    const state = fleet();
    expect(new Set(state.models())).toEqual(new Set(["m", "adapter-a", "adapter-b"]));
    expect(state.parentOf("adapter-a")).toBe("m");
    expect(state.parentOf("m")).toBeUndefined();
    const miss = state.route("adapter-z", tokens);
    expect(miss).toMatchObject({ status: 404, code: "model_not_found" });
    expect("message" in miss && miss.message.startsWith("The model `adapter-z` does not exist.")).toBe(true);
    state.putWorker(workerRecord("w3", { worker_index: 3 }));
    expect(state.route("adapter-b", tokens)).toMatchObject({ status: 404 });
    state.removeWorker("w1");
    expect(new Set(Array.from({ length: 6 }, () => plan(state.route("adapter-a", tokens)).worker.id))).toEqual(new Set(["w2"]));
  });

  test("one batch interleaving a holder's adapter and base-model runs (the feed's reused arrays), then an agent snapshot with adapter blocks", () => {
    const state = fleet();
    const base = stored("w1", null);
    const adapter = stored("w1", "adapter-a");
    const removeBase: RouterEvent = { holder: { workerId: "w1", dpRank: 0 }, tier: "device", kind: "removed", blocks: base.kind === "stored" ? base.blocks.slice(4) : [], parentHash: null };
    state.apply([adapter, base, removeBase, stored("w2", "adapter-a", 2)]);
    expect(plan(state.route("adapter-a", tokens)).worker.id).toBe("w1");
    expect(plan(state.route("adapter-a", tokens)).decision.deviceOverlap).toBe(8);
    expect(plan(state.route("m", tokens, new Set(["w0", "w2", "w3"]))).decision.deviceOverlap).toBe(4);
    // A snapshot of w2 with the adapter's 8 blocks (the agent's seq hashes): w2 now holds as much as w1.
    const snap = stored("w2", "adapter-a");
    state.applySnapshotHolder({ cache_owner_id: "owner-w2", worker_id: "w2", dp_rank: 0, tiers: { device: snap.kind === "stored" ? snap.blocks.map((b) => ({ seq_hash: String(b.seqHash), local_hash: String(b.localHash) })) : [], host: [], disk: [] } });
    expect(plan(state.route("adapter-a", tokens, new Set(["w1"]))).decision.deviceOverlap).toBe(8);
  });

  test("an adapter's request held while its base model's workers are saturated is released as their load drops, in turn with the base model's", async () => {
    // One rank with a 16-token budget, held above half of it: one 9-token prompt saturates it.
    const state = routingState("kv", { router: { queueThreshold: 0.5 } });
    state.putWorker(workerRecord("a", { max_num_batched_tokens: 16, lora_adapters: ["sql-lora"] }));
    const prompt = [1, 2, 3, 4, 5, 6, 7, 8, 9];
    const first = plan(state.route("m", prompt));
    expect(state.routerOf("m")!.saturated()).toBe(true);
    const adapter = state.routeOrHold("sql-lora", prompt);
    const base = state.routeOrHold("m", prompt);
    expect(state.heldCount).toBe(2);
    state.firstToken(first);
    state.finish(first);
    // Oldest first: the adapter's request, then (once it too finished) the base model's.
    const a = plan(await adapter);
    expect([a.worker.id, a.loraName]).toEqual(["a", "sql-lora"]);
    expect(state.heldCount).toBe(1);
    state.finish(a);
    expect(plan(await base).loraName).toBeUndefined();
    expect(state.heldCount).toBe(0);
  });
});
