// Router replica sync across the other features: two replicas over an in-memory NATS link route a
// prefill/decode stack's legs and LoRA adapters' requests, and each replica counts the other's
// exactly as its own: prefill legs in the prefill pool, decode legs without prefill tokens, an
// adapter's blocks under the adapter's hashes.
import { afterEach, describe, expect, test } from "bun:test";
import { logger, routingState, workerRecord } from "../../../test/routing/fake-fleet.ts";
import type { NatsLink } from "../../transport/nats/nats-link.ts";
import { REMOTE_PREFILLED } from "./disagg/decode-leg.ts";
import { ReplicaSync } from "./replica-sync.ts";
import type { RoutePlan, RouteFailure } from "./route-plan.ts";
import type { RoutingState } from "./routing-state.ts";

/** Delivers every publish to every subscriber of the subject at once (the sender skips its own). */
function memoryLink(): () => NatsLink {
  const subs = new Map<string, ((d: Uint8Array) => void)[]>();
  return () => ({
    connected: true,
    maxPayload: 1 << 20,
    disconnects: 0,
    publish: (subject, data) => {
      for (const f of subs.get(subject) ?? []) f(data);
      return true;
    },
    subscribe: (subject, f) => void subs.set(subject, [...(subs.get(subject) ?? []), f]),
    flush: async () => {},
    close: async () => {},
    [Symbol.asyncDispose]: async () => {},
  });
}

const open: ReplicaSync[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s[Symbol.asyncDispose]();
});

function replicas(): [RoutingState, ReplicaSync, RoutingState] {
  const link = memoryLink();
  const states = [0, 1].map(() => {
    const s = routingState("kv");
    s.putWorker(workerRecord("p1", { disaggregation_mode: "prefill", lora_adapters: ["sql-lora"] }));
    s.putWorker(workerRecord("d1", { disaggregation_mode: "decode", lora_adapters: ["sql-lora"] }));
    return s;
  });
  const syncs = states.map((state, i) => new ReplicaSync({ state, link: link(), namespace: "ns", timeoutS: 10, logger, now: () => 0, wallMs: () => 0, routerId: `r${i}` }));
  open.push(...syncs);
  return [states[0]!, syncs[0]!, states[1]!];
}

const plan = (p: RoutePlan | RouteFailure): RoutePlan => {
  if ("status" in p) throw new Error(p.message);
  return p;
};
const PROMPT = Array.from({ length: 32 }, (_, i) => 10 + i);

/** What a replica counts on p1 (prefill pool) and d1 (decode pool). */
function load(s: RoutingState) {
  const p = s.routerOf("m", "prefill")!;
  const d = s.routerOf("m")!;
  const [pr, dr] = [s.rankIdOf("p1", 0), s.rankIdOf("d1", 0)];
  return { prefillTokens: p.activePrefillTokensOf(pr), prefillBlocks: p.activeBlocksOf(pr), decodeTokens: d.activePrefillTokensOf(dr), decodeBlocks: d.activeBlocksOf(dr) };
}

describe("router replica sync with prefill/decode legs and LoRA adapters", () => {
  for (const model of ["m", "sql-lora"]) {
    test(`${model}: a remote replica counts the prefill leg in the prefill pool and the decode leg on load alone, as the local one does; frees empty both`, () => {
      const [a, sync, b] = replicas();
      const pre = plan(a.route(model, PROMPT, undefined, { pool: "prefill" }));
      const dec = plan(a.route(model, PROMPT, undefined, REMOTE_PREFILLED));
      sync.flush();
      expect(load(a)).toEqual({ prefillTokens: 32, prefillBlocks: 0, decodeTokens: 0, decodeBlocks: 8 });
      expect(load(b)).toEqual(load(a));
      a.firstToken(pre);
      a.finish(pre);
      a.finish(dec);
      sync.flush();
      expect(load(b)).toEqual({ prefillTokens: 0, prefillBlocks: 0, decodeTokens: 0, decodeBlocks: 0 });
    });
  }

  test("an adapter's remote blocks are the adapter's: the same prompt under the base model shares none of them", () => {
    const [a, sync, b] = replicas();
    plan(a.route("sql-lora", PROMPT, undefined, REMOTE_PREFILLED));
    sync.flush();
    // A new request shares the active prefix only under the same adapter (newBlocks 0), not under the base model (8).
    expect(plan(b.route("sql-lora", PROMPT, undefined, REMOTE_PREFILLED)).decision.newBlocks).toBe(0);
    expect(plan(b.route("m", PROMPT, undefined, REMOTE_PREFILLED)).decision.newBlocks).toBe(8);
  });
});
