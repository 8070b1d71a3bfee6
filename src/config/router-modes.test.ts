import { describe, expect, test } from "bun:test";
import { ConfigError } from "../lib/errors.ts";
import { LIVE_ROUTER_MODES, ROUTER_MODE_TABLE, ROUTER_MODES } from "../protocol/router-modes.ts";
import { benchOptions } from "./bench.ts";
import { commonOptions } from "./common.ts";
import { frontendOptions, frontendProblems, type FrontendConfig } from "./frontend.ts";
import { loadConfig } from "./load.ts";
import { replayOptions, replayProblems, type ReplayConfig } from "./replay.ts";
import { upOptions } from "./up.ts";

const problemsOf = (run: () => unknown): readonly string[] => {
  try {
    run();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
};
const frontend = (argv: string[], env: Record<string, string> = {}) => loadConfig({ ...frontendOptions, ...commonOptions }, { argv, env }, (c) => frontendProblems(c as FrontendConfig));
const replay = (argv: string[]) => loadConfig(replayOptions, { argv, readFile: () => "" }, (c) => replayProblems(c as ReplayConfig)).config as ReplayConfig;

describe("router modes: oracle is replay-only", () => {
  test("the frontend refuses --router-mode oracle, saying why and what to use", () => {
    const why = "oracle is replay-only: it routes on the simulated engines' true cache and load, which a live router cannot see; use kv here, and `kvcr-mock replay --router-mode oracle` for the bound";
    expect(problemsOf(() => frontend(["--router-mode", "oracle"]))).toEqual([`--router-mode: ${why}`]);
    expect(problemsOf(() => frontend([], { DYN_ROUTER_MODE: "oracle" }))).toEqual([`DYN_ROUTER_MODE (environment): ${why}`]);
    // Other unknown values keep the usual message (prototype names are not reasons).
    expect(problemsOf(() => frontend(["--router-mode", "toString"]))).toEqual(['--router-mode: got "toString", expected one of kv, round-robin, random']);
  });

  test("replay takes it", () => {
    expect(replay(["--router-mode", "oracle"]).routerMode).toBe("oracle");
    expect(replayOptions.routerMode.choices).toEqual(["kv", "round-robin", "random", "oracle"]);
  });
});

describe("router modes: one table", () => {
  test("every command's choices and --help come from it", () => {
    expect(LIVE_ROUTER_MODES).toEqual(["kv", "round-robin", "random"]);
    expect(frontendOptions.routerMode.choices).toEqual(LIVE_ROUTER_MODES);
    expect(upOptions.routerMode.choices).toEqual(LIVE_ROUTER_MODES);
    expect(benchOptions.routerMode.choices).toEqual(ROUTER_MODES);
    for (const mode of ROUTER_MODES) expect(replayOptions.routerMode.description).toContain(`${mode} = ${ROUTER_MODE_TABLE[mode].summary}`);
    for (const mode of LIVE_ROUTER_MODES) expect(frontendOptions.routerMode.description).toContain(`${mode} = ${ROUTER_MODE_TABLE[mode].summary}`);
    expect(frontendOptions.routerMode.description).not.toContain("oracle =");
  });
});
