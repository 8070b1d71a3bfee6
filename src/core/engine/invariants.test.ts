// Property tests of the engine's invariants over random small configs and workloads.
// Bounded (numRuns) so the whole file runs in a few seconds.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { engineConfigArb as configArb, promptOf, requestArb, type RandomRequest as Req } from "../../../test/arbitraries/engine.ts";
import { engine, residencyMismatch, storedEventProblem } from "../../../test/engine-kit.ts";
import type { EngineConfig } from "./engine-config.ts";
import type { KvEvent } from "../kv/kv-events.ts";

/** What the random runs exercised, so the properties cannot pass vacuously. */
const seen = { preemptions: 0, hostLoads: 0, hostStores: 0, hostRemovals: 0, deviceRemovals: 0, dropped: 0, fenceWaits: 0, refused: 0 };

interface Outcome {
  log: string[];
  tokens: Map<string, number[]>;
}

function simulate(cfg: Partial<EngineConfig>, reqs: Req[]): Outcome {
  const e = engine(cfg);
  const events: KvEvent[] = [];
  const tokens = new Map<string, number[]>();
  const expected = new Map<string, number>();
  const finished = new Set<string>();
  const log: string[] = [];
  let now = 0;
  for (let step = 0; step < 400; step++) {
    reqs.forEach((r, i) => {
      if (r.arriveAtStep !== step) return;
      const added = e.addRequest({ id: `r${i}`, tokenIds: promptOf(r), maxTokens: r.maxTokens });
      if (added.ok) expected.set(`r${i}`, r.maxTokens);
      else {
        seen.refused++;
        log.push(`refused r${i}: ${added.reason}`);
      }
    });
    const res = e.step(now);
    if (res.durationMs !== 0 && res.durationMs !== 1 && res.durationMs !== 2) seen.fenceWaits++; // fixed model: 1 or 2 ms unless a fence waited
    if (res.dropped) seen.dropped += res.dropped.length;
    now += res.durationMs;
    if (res.scheduledRequests === 0) now = Math.max(now + 1, e.nextWakeMs() ?? 0);
    for (const ev of res.events) {
      events.push(ev);
      if (ev.kind === "stored" && ev.tier === "host") seen.hostStores++;
      if (ev.kind === "removed") seen[ev.tier === "host" ? "hostRemovals" : "deviceRemovals"]++;
      // vLLM's BlockPool emits one BlockRemoved per evicted G1 block.
      if (ev.kind === "removed" && ev.tier === "device") expect(ev.blockHashes.length).toBe(1);
      log.push(ev.kind === "cleared" ? `cleared ${ev.tier}` : `${ev.kind} ${ev.tier} ${ev.blockHashes.join(",")}${ev.kind === "stored" ? ` p=${ev.parentHash} t=${[...ev.tokenIds].join(",")}` : ""}`);
    }
    for (const t of res.tokens) {
      const list = tokens.get(t.requestId) ?? [];
      list.push(t.tokenId);
      tokens.set(t.requestId, list);
      log.push(`token ${t.requestId} ${t.tokenId}`);
    }
    for (const f of res.finished) {
      finished.add(f.requestId);
      // Every request finishes with exactly its max output tokens.
      expect(tokens.get(f.requestId)?.length).toBe(expected.get(f.requestId));
      expect(f.completionTokens).toBe(expected.get(f.requestId)!);
      expect(f.cachedTokens).toBeLessThan(f.promptTokens);
    }
    const st = e.inspect();
    // Refcounts never negative; used ≤ capacity per tier.
    expect(st.refcounts.every((x) => x >= 0)).toBe(true);
    const m = e.metrics();
    expect(m.activeBlocks).toBeLessThanOrEqual(m.gpuBlocks);
    expect(m.activeBlocks).toBe(st.refcounts.filter((x) => x > 0).length);
    expect(st.resident.device.length).toBeLessThanOrEqual(m.gpuBlocks);
    expect(st.hostUsedBlocks).toBeLessThanOrEqual(m.hostBlocks);
    expect(st.resident.host.length).toBeLessThanOrEqual(m.hostBlocks);
    // Replaying the event log gives exactly the engine's resident blocks per tier.
    expect(residencyMismatch(e, events)).toBeUndefined();
    // Every stored event's tokens and parent reproduce its hashes (host stores included).
    expect(storedEventProblem(res.events)).toBeUndefined();
    // Unfinished requests are still queued (waiting or running), never lost.
    for (const id of expected.keys()) {
      if (!finished.has(id)) expect(st.running.includes(id) || st.waiting.includes(id)).toBe(true);
      else expect(tokens.get(id)!.length).toBe(expected.get(id)!);
    }
    if (step > 25 && e.pendingRequests === 0 && e.nextWakeMs() === undefined) break;
  }
  const m = e.metrics();
  seen.preemptions += m.preemptions;
  seen.hostLoads += m.prefixHostHitTokens;
  // Liveness: with the step budget above every accepted request completes.
  expect([...expected.keys()].filter((id) => !finished.has(id))).toEqual([]);
  return { log, tokens };
}

describe("engine invariants (fast-check)", () => {
  test("refcounts, capacities, exact output counts, event-log residency, liveness", () => {
    fc.assert(
      fc.property(configArb, fc.array(requestArb, { minLength: 1, maxLength: 10 }), (cfg, reqs) => {
        simulate(cfg, reqs);
      }),
      { numRuns: 400, seed: 4242 },
    );
    for (const [what, count] of Object.entries(seen)) expect([what, count > 0]).toEqual([what, true]);
  });

  test("same seed → identical event log and tokens", () => {
    fc.assert(
      fc.property(configArb, fc.array(requestArb, { minLength: 1, maxLength: 8 }), (cfg, reqs) => {
        const a = simulate(cfg, reqs);
        const b = simulate(cfg, reqs);
        expect(b.log).toEqual(a.log);
        expect([...b.tokens]).toEqual([...a.tokens]);
      }),
      { numRuns: 40, seed: 7 },
    );
  });
});
