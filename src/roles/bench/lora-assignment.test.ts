import { describe, expect, test } from "bun:test";
import { parseLoraNames, parseZipf } from "../../config/lora-modules.ts";
import type { WorkloadRequest } from "../../core/workload/workload.ts";
import type { TimedRecord } from "./drive-load.ts";
import { assignAdapters, splitRecordsByAdapter } from "./lora-assignment.ts";

const req = (loraName?: string): WorkloadRequest => ({ timestampMs: 0, inputLength: 4, outputLength: 1, ...(loraName ? { loraName } : {}), writeTokens: (o) => o.fill(7, 0, 4) });
const record = (index: number, ok: boolean, ttftMs: number, cachedTokens?: number): TimedRecord => ({ index, inFlightAtSend: 1, ok, sentMs: 0, ttftMs, itlMs: [], e2elMs: ttftMs, promptTokens: 100, outputTokens: 1, ...(cachedTokens !== undefined ? { cachedTokens } : {}) });

describe("bench --lora-modules", () => {
  test("names after one flag, spaces or commas; pairs and repeats refused", () => {
    expect(parseLoraNames("a b,c")).toEqual(["a", "b", "c"]);
    expect(parseLoraNames("a a")).toBe("--lora-modules: adapter a is given twice");
    expect(parseLoraNames("a=/p")).toContain("bench takes adapter names");
  });

  test("random picks are seeded (same seed, same picks) and use every name; round-robin takes them in turn; a row's own adapter wins", () => {
    const w = Array.from({ length: 60 }, () => req());
    const names = ["a", "b", "c"];
    const r1 = assignAdapters(w, { names, assignment: "random" }, 5).map((r) => r.loraName);
    expect(assignAdapters(w, { names, assignment: "random" }, 5).map((r) => r.loraName)).toEqual(r1);
    expect(new Set(r1)).toEqual(new Set(names));
    expect(assignAdapters(w.slice(0, 4), { names, assignment: "round-robin" }, 5).map((r) => r.loraName)).toEqual(["a", "b", "c", "a"]);
    expect(assignAdapters([req("own")], { names, assignment: "random" }, 5)[0]!.loraName).toBe("own");
    const tokens = new Uint32Array(4);
    assignAdapters(w, { names, assignment: "random" }, 5)[0]!.writeTokens(tokens);
    expect([...tokens]).toEqual([7, 7, 7, 7]);
    expect(assignAdapters(w, undefined, 5)).toBe(w);
  });

  test("--lora-popularity zipf:S favours the first names in the weights' proportions; a bad value is refused", () => {
    const w = Array.from({ length: 6000 }, () => req());
    const picks = assignAdapters(w, { names: ["a", "b", "c"], assignment: "random", zipf: 1 }, 3).map((r) => r.loraName);
    const share = (n: string) => picks.filter((p) => p === n).length / picks.length;
    // Weights 1, 1/2, 1/3 of 11/6: 0.545, 0.273, 0.182.
    expect(Math.abs(share("a") - 6 / 11)).toBeLessThan(0.03);
    expect(Math.abs(share("b") - 3 / 11)).toBeLessThan(0.03);
    expect(Math.abs(share("c") - 2 / 11)).toBeLessThan(0.03);
    expect(parseZipf("zipf:1.1")).toBe(1.1);
    expect(parseZipf("zipf:0")).toContain("expected zipf:S with S > 0");
    expect(parseZipf("pareto:1")).toContain("expected zipf:S");
  });

  test("the result splits by adapter: counts, TTFT, reuse where the server reported cached tokens", () => {
    const w = [req(), req("a"), req("a"), req("b")];
    const split = splitRecordsByAdapter([record(0, true, 10, 50), record(1, true, 20, 25), record(2, false, NaN), record(3, true, 30)], w)!;
    expect(split).toEqual([
      { lora_name: null, completed: 1, failed: 0, mean_ttft_ms: 10, p99_ttft_ms: 10, prefix_cache_reuse_ratio: 0.5 },
      { lora_name: "a", completed: 1, failed: 1, mean_ttft_ms: 20, p99_ttft_ms: 20, prefix_cache_reuse_ratio: 0.25 },
      { lora_name: "b", completed: 1, failed: 0, mean_ttft_ms: 30, p99_ttft_ms: 30, prefix_cache_reuse_ratio: null },
    ]);
    expect(splitRecordsByAdapter([record(0, true, 10)], [req()])).toBeUndefined();
  });
});
