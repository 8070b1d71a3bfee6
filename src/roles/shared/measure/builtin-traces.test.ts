import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { createLogger } from "../../../lib/logger.ts";
import { BUILTIN_TRACE_NAMES, tracePath } from "./builtin-traces.ts";
import { loadWorkload } from "./workload.ts";

describe("built-in traces", () => {
  test("builtin:<name> is a readable Mooncake trace; other paths pass through; an unknown name lists the known ones", () => {
    expect(BUILTIN_TRACE_NAMES).toEqual(["builtin:mooncake-conversation", "builtin:mooncake-synthetic", "builtin:sample-sessions"]);
    for (const name of BUILTIN_TRACE_NAMES) expect(readFileSync(tracePath(name), "utf8").split("\n")[0]).toContain('"hash_ids"');
    expect(tracePath("my/trace.jsonl")).toBe("my/trace.jsonl");
    expect(() => tracePath("builtin:nope")).toThrow("no built-in trace builtin:nope; built in: builtin:mooncake-conversation, builtin:mooncake-synthetic, builtin:sample-sessions");
  });

  test("the workload loader reads builtin:mooncake-conversation (12,031 requests)", () => {
    const opts = { trace: "builtin:mooncake-conversation", traceBlockSize: 512, skipBadLines: false, seed: 0, synthetic: {} } as unknown as Parameters<typeof loadWorkload>[0];
    const requests = loadWorkload(opts, { readFile: (p) => readFileSync(p, "utf8"), logger: createLogger({ level: "silent" }) });
    expect(requests.length).toBe(12_031);
  });

  test("builtin:sample-sessions is a session trace: 64 sessions of 6 turns, each turn's blocks extending the previous turn's", () => {
    const opts = { trace: "builtin:sample-sessions", traceBlockSize: 512, skipBadLines: false, seed: 0, synthetic: {} } as unknown as Parameters<typeof loadWorkload>[0];
    const turns = loadWorkload(opts, { readFile: (p) => readFileSync(p, "utf8"), logger: createLogger({ level: "silent" }) });
    expect(turns.length).toBe(384);
    expect(new Set(turns.map((t) => t.session!.session)).size).toBe(64);
    expect(Math.max(...turns.map((t) => t.session!.turn))).toBe(6);
    const tokens = (i: number) => {
      const out = new Uint32Array(turns[i]!.inputLength);
      turns[i]!.writeTokens(out);
      return out;
    };
    const [a, b] = [tokens(0), tokens(1)];
    expect(turns[1]!.session!.previous).toBe(0);
    expect(Array.from(b.subarray(0, Math.floor(a.length / 512) * 512))).toEqual(Array.from(a.subarray(0, Math.floor(a.length / 512) * 512)));
  });
});

test("--help names the built-in traces", async () => {
  const { replayOptions } = await import("../../../config/replay.ts");
  for (const name of BUILTIN_TRACE_NAMES) expect(replayOptions.trace.description).toContain(name);
});
