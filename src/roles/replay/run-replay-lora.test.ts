// Replay of a trace whose rows name LoRA adapters: the report splits by adapter (JSON and table),
// and --lora-replicas places each adapter on that many workers, its requests going only there.
import { describe, expect, test } from "bun:test";
import { createLogger } from "../../lib/logger.ts";
import { createBlockHasher } from "../../lib/xxh3.ts";
import { runReplay, type ReplayDeps, type ReplayOptions } from "./run-replay.ts";

const row = (ts: number, ids: number[], lora?: string) => JSON.stringify({ timestamp: ts, input_length: ids.length * 4, output_length: 2, hash_ids: ids, ...(lora ? { lora_name: lora } : {}) });
// Each adapter repeats its own 3-block prefix; the base model repeats the same tokens.
const trace = Array.from({ length: 30 }, (_, i) => row(i, [1, 2, 3, 100 + i], [undefined, "sql-lora", "chat-lora"][i % 3])).join("\n");

function deps(out: string[]): ReplayDeps {
  return {
    hasher: createBlockHasher(),
    readFile: () => trace,
    writeFile: () => {},
    checkWritable: () => {},
    stdout: { write: (t: string) => out.push(t) },
    logger: createLogger({ level: "warn", stream: { write: () => true } as unknown as NodeJS.WritableStream }),
    now: () => 0,
  };
}
const opts: ReplayOptions = { trace: "t.jsonl", traceBlockSize: 4, skipBadLines: false, synthetic: { numPrefixes: 1, prefixTokens: 4, suffixTokens: 4, outputTokens: 2 }, arrivalSpeedupRatio: 1, numWorkers: 4, routerMode: "kv", engine: { blockSize: 4 }, seed: 0, concurrency: 1 };

describe("replay with LoRA adapters", () => {
  test("the report splits by adapter; the same prefix is reused within an adapter only", async () => {
    const out: string[] = [];
    const r = await runReplay({ ...opts, loraReplicas: 1 }, deps(out));
    expect(r.by_lora_adapter!.map((a) => [a.lora_name, a.completed])).toEqual([
      [null, 10],
      ["chat-lora", 10],
      ["sql-lora", 10],
    ]);
    // Each group computes its 3 prefix blocks once (12 of its 160 prompt tokens), then hits them: 9 × 12 cached.
    for (const a of r.by_lora_adapter!) expect(a.cached_tokens).toBe(9 * 12);
    expect(out.join("")).toContain("sql-lora: requests / reuse / mean TTFT (ms)");
  });

  test("--lora-replicas 1 sends each adapter's requests to one worker", async () => {
    const r = await runReplay({ ...opts, routerMode: "round-robin", loraReplicas: 1 }, deps([]));
    // Round-robin spreads the base model over all 4 workers; each adapter's 10 requests land on one.
    expect(r.requests_per_worker.reduce((a, b) => a + b, 0)).toBe(30);
    expect(r.by_lora_adapter!.find((a) => a.lora_name === "sql-lora")!.cached_tokens).toBe(9 * 12);
    const spread = await runReplay({ ...opts, routerMode: "round-robin" }, deps([]));
    expect(spread.by_lora_adapter!.find((a) => a.lora_name === "sql-lora")!.cached_tokens).toBeLessThan(9 * 12);
  });

  test("a session trace's turns keep their adapter: split by adapter, each adapter's turns reusing only their own blocks", async () => {
    // Two 3-turn sessions over the same tokens, one under the base model, one under sql-lora.
    const turn = (session: string, k: number, lora?: string) => JSON.stringify({ session_id: session, ...(k === 0 ? { timestamp: 0 } : { delay: 1 }), input_length: 4 * (k + 1), output_length: 2, hash_ids: [1, 2, 3].slice(0, k + 1), ...(lora ? { lora_name: lora } : {}) });
    const text = [0, 1, 2].flatMap((k) => [turn("base", k), turn("lora", k, "sql-lora")]).join("\n");
    const r = await runReplay({ ...opts, numWorkers: 1 }, { ...deps([]), readFile: () => text });
    expect(r.by_lora_adapter!.map((a) => [a.lora_name, a.completed])).toEqual([
      [null, 3],
      ["sql-lora", 3],
    ]);
    // Turn 2 hits turn 1's block, turn 3 turn 2's two: 12 tokens per session, whichever ran first.
    for (const a of r.by_lora_adapter!) expect(a.cached_tokens).toBe(12);
  });
});
