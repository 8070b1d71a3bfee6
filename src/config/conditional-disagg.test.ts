import { describe, expect, test } from "bun:test";
import { ConfigError } from "../lib/errors.ts";
import { thrownBy } from "../../test/harness.ts";
import { commonOptions } from "./common.ts";
import { islBoundingOf } from "./conditional-disagg.ts";
import { frontendOptions, frontendProblems, type FrontendConfig } from "./frontend.ts";
import { loadConfig } from "./load.ts";

const table = { ...frontendOptions, ...commonOptions };
const load = (argv: string[]) => loadConfig(table, { argv, readFile: () => "" }, (c) => frontendProblems(c as FrontendConfig)).config as FrontendConfig;
const problems = (argv: string[]) => [...thrownBy(ConfigError, () => load(argv)).problems];

describe("conditional disaggregation flags", () => {
  test("off by default; on, Dynamo's isl_bounding defaults (2048 tokens, 0.7) unless given", () => {
    expect(islBoundingOf(load([]))).toBeUndefined();
    expect(islBoundingOf(load(["--router-mode", "kv", "--router-conditional-disagg"]))).toEqual({ effIslThreshold: 2048, effIslRatioThreshold: 0.7 });
    const c = load(["--router-mode", "kv", "--router-conditional-disagg", "--router-conditional-disagg-eff-isl-threshold", "512", "--router-conditional-disagg-eff-isl-ratio-threshold", "0.5"]);
    expect(islBoundingOf(c)).toEqual({ effIslThreshold: 512, effIslRatioThreshold: 0.5 });
  });

  test("contradictions name both flags; a ratio outside [0, 1] is refused", () => {
    expect(problems(["--router-conditional-disagg"])[0]).toContain("--router-mode round-robin");
    expect(problems(["--router-mode", "kv", "--router-conditional-disagg-eff-isl-threshold", "100"])[0]).toContain("--router-conditional-disagg-eff-isl-threshold");
    expect(problems(["--router-mode", "kv", "--router-conditional-disagg", "--router-conditional-disagg-eff-isl-ratio-threshold", "1.5"])[0]).toContain("--router-conditional-disagg-eff-isl-ratio-threshold");
  });
});
