// The router flags as users give them (Dynamo's spellings, the deprecated alias, env) → the core
// router's options, the same for the frontend and replay.
import { describe, expect, test } from "bun:test";
import { thrownBy } from "../../../../test/harness.ts";
import { commonOptions } from "../../../config/common.ts";
import { frontendOptions } from "../../../config/frontend.ts";
import { loadConfig } from "../../../config/load.ts";
import { replayOptions } from "../../../config/replay.ts";
import { ConfigError } from "../../../lib/errors.ts";
import { routerOptionsFrom, routerWarnings } from "./router-settings.ts";

const frontend = (argv: string[], env: Record<string, string> = {}) => loadConfig({ ...frontendOptions, ...commonOptions }, { argv, env }).config;

describe("router flags", () => {
  test("defaults: scale 1, credit 1, Dynamo's tier weights, no thresholds, KV events followed", () => {
    const o = routerOptionsFrom(frontend(["--router-mode", "kv"]));
    expect(o).toEqual({
      mode: "kv", prefillLoadScale: 1, overlapScoreCredit: 1, hostWeight: 0.75, diskWeight: 0.25, temperature: 0,
      busy: { activeDecodeBlocks: undefined, activePrefillTokens: undefined, activePrefillTokensFrac: undefined }, approximateTtlMs: undefined, queueThreshold: undefined,
    });
    expect(routerWarnings(frontend([]))).toEqual([]);
  });

  test("--router-kv-overlap-score-weight is an alias of the prefill scale", () => {
    expect(routerOptionsFrom(frontend(["--router-kv-overlap-score-weight", "2"]))).toMatchObject({ prefillLoadScale: 2, overlapScoreCredit: 1 });
  });

  test("--router-kv-overlap-score-weight 0 also zeroes the overlap credit", () => {
    expect(routerOptionsFrom(frontend(["--router-kv-overlap-score-weight", "0"]))).toMatchObject({ prefillLoadScale: 0, overlapScoreCredit: 0 });
  });

  test("the new spellings win over the alias", () => {
    expect(routerOptionsFrom(frontend(["--router-kv-overlap-score-weight", "0", "--router-prefill-load-scale", "3", "--router-kv-overlap-score-credit", "0.5"]))).toMatchObject({ prefillLoadScale: 3, overlapScoreCredit: 0.5 });
  });

  test("the alias is warned about as deprecated", () => {
    expect(routerWarnings(frontend(["--router-kv-overlap-score-weight", "0"]))[0]).toContain("deprecated: use --router-prefill-load-scale");
  });

  /** Every busy threshold, approximate mode and a queue threshold, with DYN_HTTP_OVERLOAD_STATUS_CODE=503. */
  const tuned = () =>
    frontend(["--router-mode", "kv", "--active-decode-blocks-threshold", "0.8", "--active-prefill-tokens-threshold", "10000", "--active-prefill-tokens-threshold-frac", "1.5", "--no-router-kv-events", "--router-ttl-secs", "30", "--router-queue-threshold", "2"], { DYN_HTTP_OVERLOAD_STATUS_CODE: "503" });

  test("busy thresholds, approximate mode's TTL and the queue threshold reach the router", () => {
    expect(routerOptionsFrom(tuned())).toMatchObject({ busy: { activeDecodeBlocks: 0.8, activePrefillTokens: 10000, activePrefillTokensFrac: 1.5 }, approximateTtlMs: 30_000, queueThreshold: 2 });
  });

  test("the overload status comes from DYN_HTTP_OVERLOAD_STATUS_CODE, 529 by default", () => {
    expect(tuned().httpOverloadStatusCode).toBe(503);
    expect(frontend([]).httpOverloadStatusCode).toBe(529);
  });

  test("--no-router-kv-events with round-robin is warned about as having no effect", () => {
    expect(routerWarnings(frontend(["--router-mode", "round-robin", "--no-router-kv-events"]))).toEqual(["--no-router-kv-events has no effect with --router-mode round-robin"]);
  });

  test("bad values are refused naming the flag", () => {
    const problems = [...thrownBy(ConfigError, () => frontend(["--active-decode-blocks-threshold", "2", "--router-kv-overlap-score-credit", "-1", "--active-prefill-tokens-threshold", "1.5"])).problems].join("\n");
    expect(problems).toContain("--active-decode-blocks-threshold");
    expect(problems).toContain("--router-kv-overlap-score-credit");
    expect(problems).toContain("--active-prefill-tokens-threshold");
    expect(thrownBy(ConfigError, () => frontend([], { DYN_HTTP_OVERLOAD_STATUS_CODE: "200" })).problems.join("\n")).toContain("DYN_HTTP_OVERLOAD_STATUS_CODE");
  });

  test("replay takes the same flags", () => {
    const c = loadConfig({ ...replayOptions, ...commonOptions }, { argv: ["--router-prefill-load-scale", "0.5", "--no-router-kv-events"], env: {} }).config;
    expect(routerOptionsFrom(c)).toMatchObject({ mode: "kv", prefillLoadScale: 0.5, approximateTtlMs: 120_000 });
  });
});
