// `up --prefill-workers N --decode-workers M`: the processes each serve one pool (prefill first),
// state-agent mode included; the frontend gets the conditional disaggregation flags; bad layouts
// are refused naming the flags.
import { describe, expect, test } from "bun:test";
import { commonOptions } from "../../config/common.ts";
import { frontendOptions } from "../../config/frontend.ts";
import { loadConfig } from "../../config/load.ts";
import { mockerOptions } from "../../config/mocker.ts";
import { upConfigFrom } from "../../config/up.ts";
import { ConfigError } from "../../lib/errors.ts";
import { thrownBy } from "../../../test/harness.ts";
import { plan, type PlanContext } from "./plan.ts";

const ctx = (mockers: number): PlanContext => ({ self: ["/bin/kvcr"], ports: { agent: 9091, frontend: 8000, mockers: Array.from({ length: mockers }, (_, i) => 7000 + i) }, discoveryDir: "/d" });
const mockerConfigOf = (argv: string[]) => loadConfig({ ...mockerOptions, ...commonOptions }, { argv: argv.slice(2), env: {} }).config;
const frontendConfigOf = (argv: string[]) => loadConfig({ ...frontendOptions, ...commonOptions }, { argv: argv.slice(2), env: {} }).config;

describe("up's disaggregated layout", () => {
  test("N prefill and M decode workers: one pool per process, prefill first, as many per process as divide both", () => {
    const c = upConfigFrom(["--prefill-workers", "2", "--decode-workers", "4"]);
    expect([c.workersPerProcess, c.mockerProcesses]).toEqual([2, 3]);
    const mockers = plan(c, ctx(3)).processes.filter((s) => s.role === "mocker").map((s) => mockerConfigOf(s.argv));
    expect(mockers.map((m) => [m.disaggregationMode, m.numWorkers, m.kvStateAgent])).toEqual([["prefill", 2, true], ["decode", 2, true], ["decode", 2, true]]);
    // Each its own CacheOwner ordinals, as an aggregated stack's.
    expect(mockers.map((m) => m.kvStateAgentCacheSlot)).toEqual([0, 2, 4]);
    const one = upConfigFrom(["--prefill-workers", "2", "--decode-workers", "2", "--workers-per-process", "1", "--no-kv-state-agent"]);
    expect(plan(one, ctx(4)).processes.filter((s) => s.role === "mocker").map((s) => mockerConfigOf(s.argv).disaggregationMode)).toEqual(["prefill", "prefill", "decode", "decode"]);
  });

  test("an aggregated stack stays agg; the frontend gets --router-conditional-disagg and its thresholds", () => {
    expect(plan(upConfigFrom([]), ctx(1)).processes.filter((s) => s.role === "mocker").map((s) => mockerConfigOf(s.argv).disaggregationMode)).toEqual(["agg"]);
    const c = upConfigFrom(["--prefill-workers", "1", "--decode-workers", "1", "--router-conditional-disagg", "--router-conditional-disagg-eff-isl-threshold", "1024"]);
    const frontend = plan(c, ctx(2)).processes.find((s) => s.role === "frontend")!;
    expect(frontendConfigOf(frontend.argv)).toMatchObject({ routerMode: "kv", routerConditionalDisagg: true, routerConditionalDisaggEffIslThreshold: 1024 });
  });

  test("half a layout, a derived flag given too, or processes that would mix pools are refused", () => {
    const problems = (...argv: string[]) => [...thrownBy(ConfigError, () => upConfigFrom(argv)).problems];
    expect(problems("--prefill-workers", "2")).toEqual(["--prefill-workers: a disaggregated stack needs both --prefill-workers and --decode-workers"]);
    expect(problems("--prefill-workers", "2", "--decode-workers", "2", "--mocker-processes", "2")[0]).toContain("--mocker-processes: follows from --prefill-workers 2 and --decode-workers 2");
    expect(problems("--prefill-workers", "1", "--decode-workers", "2", "--workers-per-process", "2")[0]).toContain("--workers-per-process: 2 must divide");
    expect(problems("--prefill-workers", "1", "--decode-workers", "1", "--router-mode", "round-robin", "--router-conditional-disagg")[0]).toContain("--router-mode round-robin");
  });
});
