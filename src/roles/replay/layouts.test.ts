import { describe, expect, test } from "bun:test";
import { ConfigError } from "../../lib/errors.ts";
import { createLogger } from "../../lib/logger.ts";
import { createBlockHasher } from "../../lib/xxh3.ts";
import { thrownBy } from "../../../test/harness.ts";
import { loadConfig } from "../../config/load.ts";
import { replayOptions, replayProblems, type ReplayConfig } from "../../config/replay.ts";
import { replayOptionsFrom } from "./options-from-config.ts";
import { runReplay, type ReplayDeps } from "./run-replay.ts";

const load = (argv: string[]) => loadConfig(replayOptions, { argv, readFile: () => "" }, (c) => replayProblems(c as ReplayConfig)).config as ReplayConfig;
const problems = (argv: string[]) => [...thrownBy(ConfigError, () => load(argv)).problems];

function deps(out: string[], written: Record<string, string>): ReplayDeps {
  let t = 0;
  return {
    hasher: createBlockHasher(),
    readFile: () => "",
    writeFile: (p, text) => void (written[p] = text),
    checkWritable: () => {},
    stdout: { write: (text: string) => out.push(text) },
    logger: createLogger({ level: "silent" }),
    now: () => (t += 5),
  };
}

const WORKLOAD = ["--requests", "60", "--num-prefixes", "4", "--prefix-tokens", "256", "--suffix-tokens", "64", "--output-tokens", "16", "--block-size", "16", "--request-rate", "40"];

describe("replay layouts", () => {
  test("--prefill-workers and --decode-workers replay the disaggregated layout, with the hand-over's figures", async () => {
    const out: string[] = [];
    const written: Record<string, string> = {};
    const report = await runReplay({ ...replayOptionsFrom(load([...WORKLOAD, "--prefill-workers", "1", "--decode-workers", "2", "--kv-transfer-bandwidth", "2"])), outputJson: "r.json" }, deps(out, written));
    expect(report.completed).toBe(60);
    const json = JSON.parse(written["r.json"]!) as { disaggregation: { kv_transfers: number; kv_transfer_bytes: number; prefill_workers: number }; requests_per_worker: number[] };
    expect(json.disaggregation).toMatchObject({ kv_transfers: 60, prefill_workers: 1 });
    expect(json.disaggregation.kv_transfer_bytes).toBe(60 * 320 * 131_072);
    expect(json.requests_per_worker).toEqual([60, expect.any(Number), expect.any(Number)]);
    expect(out.join("")).toContain("KV pulls (full_prompt): 60");
  });

  test("--compare-layouts agg,disagg runs both on the same total and ends with the verdict", async () => {
    const out: string[] = [];
    const written: Record<string, string> = {};
    await runReplay({ ...replayOptionsFrom(load([...WORKLOAD, "--prefill-workers", "1", "--decode-workers", "1", "--compare-layouts", "agg,disagg"])), outputJson: "c.json" }, deps(out, written));
    const json = JSON.parse(written["c.json"]!) as { reports: Record<string, { num_workers: number; completed: number }>; verdict: { sides: string[]; entries: { metric: string; side: string }[] } };
    expect(Object.keys(json.reports)).toEqual(["agg", "disagg"]);
    expect(json.reports.agg!.num_workers).toBe(2);
    expect(json.verdict.sides).toEqual(["agg", "disagg"]);
    expect(json.verdict.entries.map((e) => e.metric)).toContain("mean_itl_ms");
    const text = out.join("");
    expect(text.indexOf("Layout agg")).toBeLessThan(text.indexOf("Layout disagg"));
    expect(text).toContain("Verdict:\n  disagg vs agg: mean TTFT");
  });

  test("a session workload with a layout is refused, naming both, before anything is simulated", async () => {
    const out: string[] = [];
    const written: Record<string, string> = {};
    const argv = ["--sessions", "4", "--turns", "3", "--prefix-tokens", "64", "--suffix-tokens", "16", "--output-tokens", "8", "--block-size", "16", "--prefill-workers", "1", "--decode-workers", "1"];
    const refused = await runReplay({ ...replayOptionsFrom(load(argv)), outputJson: "s.json" }, deps(out, written)).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as ConfigError).problems[0]).toContain("--prefill-workers/--decode-workers and --compare-layouts replay independent requests, not sessions");
    expect(written["s.json"]).toBeUndefined();
  });

  test("half a layout, an unknown layout, or settings a layout contradicts exit 2 naming the flags", () => {
    expect(problems(["--prefill-workers", "2"])).toEqual(["--prefill-workers: needs --decode-workers too (a disaggregated layout has both pools)"]);
    expect(problems(["--compare-layouts", "agg,split", "--prefill-workers", "1", "--decode-workers", "1"])[0]).toContain('unknown layout "split"');
    expect(problems(["--compare-layouts", "agg,disagg"])).toEqual(["--compare-layouts: needs --prefill-workers and --decode-workers (the disaggregated split; agg gets their sum)"]);
    const p = problems(["--prefill-workers", "1", "--decode-workers", "1", "--data-parallel-size", "2", "--regret"]);
    expect(p.map((x) => x.split(":")[0])).toEqual(["--data-parallel-size", "--regret"]);
    // The layouts place no adapters: every worker of both holds every adapter.
    expect(problems(["--prefill-workers", "1", "--decode-workers", "1", "--lora-replicas", "1"])).toEqual(["--lora-replicas: a disaggregated layout places no adapters (every worker of each layout holds every adapter); contradicts --prefill-workers / --decode-workers"]);
  });
});
