import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { createLogger } from "../../../lib/logger.ts";
import { BUILTIN_TRACE_NAMES, tracePath } from "./builtin-traces.ts";
import { loadWorkload } from "./workload.ts";

describe("built-in traces", () => {
  test("builtin:<name> is a readable Mooncake trace; other paths pass through; an unknown name lists the known ones", () => {
    expect(BUILTIN_TRACE_NAMES).toEqual(["builtin:mooncake-conversation", "builtin:mooncake-synthetic"]);
    for (const name of BUILTIN_TRACE_NAMES) expect(readFileSync(tracePath(name), "utf8").split("\n")[0]).toContain('"hash_ids"');
    expect(tracePath("my/trace.jsonl")).toBe("my/trace.jsonl");
    expect(() => tracePath("builtin:nope")).toThrow("no built-in trace builtin:nope; built in: builtin:mooncake-conversation, builtin:mooncake-synthetic");
  });

  test("the workload loader reads builtin:mooncake-conversation (12,031 requests)", () => {
    const opts = { trace: "builtin:mooncake-conversation", traceBlockSize: 512, skipBadLines: false, seed: 0, synthetic: {} } as unknown as Parameters<typeof loadWorkload>[0];
    const requests = loadWorkload(opts, { readFile: (p) => readFileSync(p, "utf8"), logger: createLogger({ level: "silent" }) });
    expect(requests.length).toBe(12_031);
  });
});

test("--help names the built-in traces", async () => {
  const { replayOptions } = await import("../../../config/replay.ts");
  for (const name of BUILTIN_TRACE_NAMES) expect(replayOptions.trace.description).toContain(name);
});
