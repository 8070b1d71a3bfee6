// The LoRA budget of a batch: at most maxLoras distinct adapters run at once, a request for another
// waits (counted as deferred) while later requests pass it, base-model requests never wait for it;
// loaded adapters are evicted least recently used when idle, and each load costs step time.
import { describe, expect, test } from "bun:test";
import { engine, runToIdle, seq, stepOnce } from "../../../test/engine-kit.ts";
import type { MockEngine } from "../engine/mock-engine.ts";

const BS = 4;
const add = (e: MockEngine, id: string, loraName?: string, maxTokens = 4) =>
  expect(e.addRequest({ id, tokenIds: seq(id.length * 1000 + id.charCodeAt(0), 3 * BS), maxTokens, ...(loraName ? { loraName } : {}) })).toEqual({ ok: true });

describe("LoRA adapters per batch", () => {
  test("--max-loras 1: a request for a second adapter waits, deferred, while base-model and same-adapter requests run", () => {
    const e = engine({ blockSize: BS, numGpuBlocks: 256, maxLoras: 1, timingModel: "fixed" });
    add(e, "a1", "a");
    add(e, "b1", "b");
    add(e, "a2", "a");
    add(e, "base");
    const run = { steps: [], events: [], tokens: new Map(), nowMs: 0 };
    stepOnce(e, run);
    expect(new Set(e.inspect().running)).toEqual(new Set(["a1", "a2", "base"]));
    expect(e.inspect().waiting).toEqual(["b1"]);
    expect(e.metrics().loraDeferredRequests).toBe(1);
    expect(e.loraState()).toEqual({ running: new Map([["a", 2]]), waiting: new Map([["b", 1]]), loaded: ["a"] });
    const rest = runToIdle(e, run.nowMs);
    const finishedAt = (id: string) => rest.steps.findIndex((s) => s.finished.some((f) => f.requestId === id));
    // b1 starts only once every request of adapter a has left the batch.
    const firstB = rest.steps.findIndex((s) => s.tokens.some((t) => t.requestId === "b1"));
    expect(firstB).toBeGreaterThan(Math.max(finishedAt("a1"), finishedAt("a2")));
    expect(e.metrics().loraDeferredRequests).toBe(0);
  });

  test("--max-loras 2: both adapters share the batch", () => {
    const e = engine({ blockSize: BS, numGpuBlocks: 256, maxLoras: 2 });
    add(e, "a1", "a");
    add(e, "b1", "b");
    runToIdle(e, 0, 1);
    expect(new Set(e.inspect().running)).toEqual(new Set(["a1", "b1"]));
    expect(e.metrics().loraDeferredRequests).toBe(0);
  });

  test("idle adapters are evicted least recently used once --max-cpu-loras are loaded", () => {
    const e = engine({ blockSize: BS, numGpuBlocks: 256, maxLoras: 1, maxCpuLoras: 2 });
    for (const [id, lora] of [["x1", "a"], ["x2", "b"], ["x3", "a"], ["x4", "c"]] as const) {
      add(e, id, lora, 1);
      runToIdle(e);
    }
    // a was used after b, so b (least recently used) made room for c.
    expect(e.loraState().loaded).toEqual(["a", "c"]);
  });

  test("--lora-load-ms adds a load to the step that first admits an adapter, not to later ones", () => {
    const durations = (loadMs: number) => {
      const e = engine({ blockSize: BS, numGpuBlocks: 256, timingModel: "fixed", prefillMs: 20, decodeMs: 10, loraLoadMs: loadMs });
      add(e, "a1", "a", 2);
      const first = runToIdle(e).steps.map((s) => s.durationMs);
      add(e, "a2", "a", 2);
      return [first, runToIdle(e).steps.map((s) => s.durationMs)];
    };
    const [loadedFirst, loadedAgain] = durations(500);
    const [plainFirst, plainAgain] = durations(0);
    expect(loadedFirst![0]! - plainFirst![0]!).toBe(500);
    expect(loadedFirst!.slice(1)).toEqual(plainFirst!.slice(1));
    expect(loadedAgain).toEqual(plainAgain);
  });

  test("a bad budget is refused", () => {
    expect(() => engine({ maxLoras: 2, maxCpuLoras: 1 })).toThrow("maxCpuLoras: got 1, expected 0 or at least maxLoras (2)");
    expect(() => engine({ maxLoras: 0 })).toThrow("maxLoras: got 0");
  });
});
