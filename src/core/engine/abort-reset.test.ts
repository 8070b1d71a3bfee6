// Property tests of the engine's invariants when clients abort requests and the prefix
// cache is reset in the middle of random workloads: the event log still reproduces residency per
// tier after every step and every reset, refcounts stay ≥ 0, and once every request has finished
// or been aborted no G1 block is held and no G2 entry is pinned. Bounded (numRuns).
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { engineConfigArb, promptOf, requestArb, type RandomRequest } from "../../../test/arbitraries/engine.ts";
import { engine, residencyMismatch, storedEventProblem } from "../../../test/engine-kit.ts";
import type { KvEvent } from "../kv/kv-events.ts";
import type { EngineConfig } from "./engine-config.ts";
import type { MockEngine } from "./mock-engine.ts";
import type { StepResult } from "./engine-types.ts";

// Aborts pick one of the requests queued right now (running or waiting), or name an id (which
// may be finished, aborted or never accepted by then), or wait for the next request loading a
// G2 prefix (a short window, rarely hit otherwise).
type Op =
  | { kind: "abortQueued"; atStep: number; target: number }
  | { kind: "abortId"; atStep: number; target: number }
  | { kind: "abortLoading"; atStep: number }
  | { kind: "reset"; atStep: number };

const atStep = fc.integer({ min: 0, max: 40 });
const target = fc.integer({ min: 0, max: 9 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("abortQueued" as const), atStep, target }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("abortId" as const), atStep, target }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("abortLoading" as const), atStep }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("reset" as const), atStep }) },
);

// Half the runs get a small G1 and a slow host-to-device lane, so G2 loads (and aborts during
// them) are common rather than lucky.
const configArb = fc.tuple(engineConfigArb, fc.boolean()).map(([c, g2]): Partial<EngineConfig> =>
  g2 && c.enablePrefixCaching ? { ...c, numGpuBlocks: Math.min(c.numGpuBlocks!, 14), numHostBlocks: 16, hostOffloadH2dBandwidthGbps: 1e-6 } : c,
);

/** What the random runs exercised, so the properties cannot pass vacuously. */
const seen = { abortWaiting: 0, abortRunning: 0, abortLoading: 0, abortUnknown: 0, resetDone: 0, resetRefused: 0, resetWithHost: 0, hostStoresAfterReset: 0 };

function check(e: MockEngine, events: readonly KvEvent[], res: StepResult | undefined): void {
  const st = e.inspect();
  const m = e.metrics();
  expect(st.refcounts.every((x) => x >= 0)).toBe(true);
  expect(m.activeBlocks).toBe(st.refcounts.filter((x) => x > 0).length);
  expect(m.activeBlocks).toBeLessThanOrEqual(m.gpuBlocks);
  expect(st.hostUsedBlocks).toBeLessThanOrEqual(m.hostBlocks);
  expect(st.hostPinnedBlocks).toBeLessThanOrEqual(st.loading.length * m.gpuBlocks);
  if (st.loading.length === 0) expect(st.hostPinnedBlocks).toBe(0);
  // Idle (what a live loop sleeps on) = nothing can compute: no request, or only loads in flight.
  expect(e.idle).toBe(e.pendingRequests === 0 || (st.waiting.length === 0 && st.running.length === st.loading.length));
  expect(residencyMismatch(e, events)).toBeUndefined();
  if (res) expect(storedEventProblem(res.events)).toBeUndefined();
}

function run(cfg: Partial<EngineConfig>, reqs: RandomRequest[], ops: Op[]): void {
  const e = engine(cfg);
  const events: KvEvent[] = [];
  const tokens = new Map<string, number>();
  const accepted = new Map<string, number>(); // id → max tokens
  const finished = new Set<string>();
  const aborted = new Set<string>();
  let now = 0;
  let resetAt = -1;
  let loadAborts = 0;
  for (let step = 0; step < 400; step++) {
    reqs.forEach((r, i) => {
      if (r.arriveAtStep !== step) return;
      if (e.addRequest({ id: `r${i}`, tokenIds: promptOf(r), maxTokens: r.maxTokens }).ok) accepted.set(`r${i}`, r.maxTokens);
    });
    for (const op of ops) if (op.atStep === step && op.kind === "abortLoading") loadAborts++;
    const due: Op[] = ops.filter((op) => op.atStep === step && op.kind !== "abortLoading");
    if (loadAborts > 0 && e.inspect().loading.length > 0) {
      loadAborts--;
      due.push({ kind: "abortLoading", atStep: step });
    }
    for (const op of due) {
      const st = e.inspect();
      if (op.kind !== "reset") {
        const queued = [...st.running, ...st.waiting];
        if (op.kind === "abortQueued" && queued.length === 0) continue;
        const id = op.kind === "abortId" ? `r${op.target}` : op.kind === "abortQueued" ? queued[op.target % queued.length]! : st.loading[0]!;
        const live = accepted.has(id) && !finished.has(id) && !aborted.has(id);
        if (st.loading.includes(id)) seen.abortLoading++;
        else if (st.running.includes(id)) seen.abortRunning++;
        else if (st.waiting.includes(id)) seen.abortWaiting++;
        else seen.abortUnknown++;
        // Only an unfinished, not yet aborted request can be aborted.
        expect(e.abortRequest(id)).toBe(live);
        if (live) aborted.add(id);
        const after = e.inspect();
        expect(after.running.includes(id) || after.waiting.includes(id)).toBe(false);
        check(e, events, undefined);
      } else {
        const res = e.resetPrefixCache();
        // vLLM's reset_prefix_cache refuses while any request holds blocks.
        expect(res === undefined).toBe(st.running.length > 0);
        if (res === undefined) {
          seen.resetRefused++;
          continue;
        }
        seen.resetDone++;
        if (cfg.numHostBlocks! > 0) seen.resetWithHost++;
        expect(res.events).toEqual([{ kind: "cleared", tier: "device" }]);
        const hostBefore = e.inspect().resident.host.toSorted();
        events.push(...res.events);
        resetAt = step;
        const after = e.inspect();
        // vLLM's reset_prefix_cache clears the GPU pool only: G2 keeps what it held.
        expect(after.resident.device).toEqual([]);
        expect(after.resident.host.toSorted()).toEqual(hostBefore);
        check(e, events, res);
      }
    }
    const res = e.step(now);
    now += res.durationMs;
    if (res.scheduledRequests === 0) now = Math.max(now + 1, e.nextWakeMs() ?? 0);
    events.push(...res.events);
    if (resetAt >= 0 && res.events.some((ev) => ev.kind === "stored" && ev.tier === "host")) seen.hostStoresAfterReset++;
    for (const t of res.tokens) {
      // An aborted request never produces another token.
      expect(aborted.has(t.requestId)).toBe(false);
      tokens.set(t.requestId, (tokens.get(t.requestId) ?? 0) + 1);
    }
    for (const f of res.finished) {
      expect(aborted.has(f.requestId)).toBe(false);
      finished.add(f.requestId);
      expect(tokens.get(f.requestId)).toBe(accepted.get(f.requestId)!);
    }
    check(e, events, res);
    // Unfinished, unaborted requests are still queued; aborted ones are gone.
    const st = e.inspect();
    for (const id of accepted.keys()) {
      const queued = st.running.includes(id) || st.waiting.includes(id);
      expect(queued).toBe(!finished.has(id) && !aborted.has(id));
    }
    if (step > 40 && e.pendingRequests === 0 && e.nextWakeMs() === undefined) break;
  }
  // Every request ended (finished or aborted): nothing holds a block or pins a host entry.
  expect([...accepted.keys()].filter((id) => !finished.has(id) && !aborted.has(id))).toEqual([]);
  expect(e.pendingRequests).toBe(0);
  const st = e.inspect();
  expect(st.refcounts.every((x) => x === 0)).toBe(true);
  expect(e.metrics().activeBlocks).toBe(0);
  expect(st.hostPinnedBlocks).toBe(0);
  expect(st.running).toEqual([]);
  expect(st.waiting).toEqual([]);
  // With nothing held, a reset is always accepted and the log ends with G1 empty, G2 unchanged.
  const hostBefore = e.inspect().resident.host.toSorted();
  const last = e.resetPrefixCache();
  expect(last).toBeDefined();
  events.push(...last!.events);
  expect(residencyMismatch(e, events)).toBeUndefined();
  expect(e.inspect().resident.device).toEqual([]);
  expect(e.inspect().resident.host.toSorted()).toEqual(hostBefore);
}

describe("engine invariants with aborts and prefix-cache resets (fast-check)", () => {
  test("residency from the event log, refcounts ≥ 0, nothing leaked once every request ended", () => {
    fc.assert(
      fc.property(configArb, fc.array(requestArb, { minLength: 1, maxLength: 10 }), fc.array(opArb, { maxLength: 8 }), (cfg, reqs, ops) => {
        run(cfg, reqs, ops);
      }),
      { numRuns: 400, seed: 4343 },
    );
    for (const [what, count] of Object.entries(seen)) expect([what, count > 0]).toEqual([what, true]);
  });
});
