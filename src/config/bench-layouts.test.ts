import { describe, expect, test } from "bun:test";
import { ConfigError } from "../lib/errors.ts";
import { thrownBy } from "../../test/harness.ts";
import { benchOptionsFrom } from "../roles/bench/options-from-config.ts";
import { benchOptions, benchProblems, roundsOf, type BenchConfig } from "./bench.ts";
import { layoutUpArgs, parseLayouts } from "./bench-layouts.ts";
import { commonOptions } from "./common.ts";
import { loadConfig } from "./load.ts";
import { upConfigFrom } from "./up.ts";

const load = (argv: string[]) => loadConfig({ ...benchOptions, ...commonOptions }, { argv, readFile: () => "" }, (c) => benchProblems(c as BenchConfig)).config as BenchConfig;
const problems = (argv: string[]) => [...thrownBy(ConfigError, () => load(argv)).problems];

describe("bench --compare-layouts", () => {
  test("one fresh stack per layout, the same workers in all: aggregated on as many processes, or up's P/D layout", () => {
    const c = load(["--compare-layouts", "agg,disagg", "--prefill-workers", "1", "--decode-workers", "3"]);
    const targets = benchOptionsFrom(c).targets;
    expect(targets).toEqual([
      { label: "agg", fresh: { routerMode: c.routerMode, upArgs: ["--mocker-processes", "4", "--workers-per-process", "1"] } },
      { label: "disagg", fresh: { routerMode: c.routerMode, upArgs: ["--prefill-workers", "1", "--decode-workers", "3"] } },
    ]);
    expect(roundsOf(c)).toBe(3); // fresh comparisons default to 3 rounds, as router modes
    // Both argument lists are stacks `up` accepts, with 4 workers each.
    for (const l of ["agg", "disagg"] as const) {
      const up = upConfigFrom(layoutUpArgs(l, { prefillWorkers: 2, decodeWorkers: 4 }));
      expect(up.mockerProcesses * up.workersPerProcess).toBe(6);
    }
    expect(parseLayouts("disagg,agg")).toEqual(["disagg", "agg"]);
  });

  test("bad lists, a running server, another comparison, or pool sizes without the comparison are refused", () => {
    expect(problems(["--compare-layouts", "agg"])[0]).toContain('--compare-layouts: got "agg"');
    expect(problems(["--compare-layouts", "agg,pd"])[0]).toContain("expected agg and disagg once each");
    expect(problems(["--compare-layouts", "agg,disagg", "--url", "http://127.0.0.1:1"])).toContain("--compare-layouts: starts a fresh stack per layout; drop --url / --url-per-mode");
    expect(problems(["--compare-layouts", "agg,disagg", "--compare-router-modes", "kv,random"])).toContain("--compare-layouts and --compare-router-modes: compare one thing at a time");
    expect(problems(["--url", "http://127.0.0.1:1", "--prefill-workers", "2"])).toEqual(["--prefill-workers: sizes the disaggregated side of --compare-layouts, which is not given"]);
  });
});
