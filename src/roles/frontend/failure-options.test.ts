// The failure flags: defaults, Dynamo's environment names, bad values refused naming the flag, and
// `up` handing them (and the mockers' --max-model-len) on to its children.
import { describe, expect, test } from "bun:test";
import { thrownBy } from "../../../test/harness.ts";
import { commonOptions } from "../../config/common.ts";
import { frontendOptions, frontendProblems, type FrontendConfig } from "../../config/frontend.ts";
import { loadConfig } from "../../config/load.ts";
import { mockerOptions } from "../../config/mocker.ts";
import { upConfigFrom } from "../../config/up.ts";
import { ConfigError } from "../../lib/errors.ts";
import { plan } from "../launcher/plan.ts";

const load = (argv: string[], env: Record<string, string> = {}) =>
  loadConfig({ ...frontendOptions, ...commonOptions }, { argv, env }, (c) => frontendProblems(c as FrontendConfig)).config as FrontendConfig;

describe("frontend failure options", () => {
  test("defaults: 2 retries, ejected after 3 failures in a row, no migration, no sequence cap", () => {
    const c = load([]);
    expect([c.routerRetries, c.workerEjectAfter, c.migrationLimit, c.migrationMaxSeqLen]).toEqual([2, 3, 0, undefined]);
  });

  test("flags, and Dynamo's DYN_MIGRATION_LIMIT / DYN_MIGRATION_MAX_SEQ_LEN", () => {
    const c = load(["--router-retries", "0", "--worker-eject-after", "1", "--migration-limit", "3", "--migration-max-seq-len", "32000"]);
    expect([c.routerRetries, c.workerEjectAfter, c.migrationLimit, c.migrationMaxSeqLen]).toEqual([0, 1, 3, 32000]);
    const e = load([], { DYN_MIGRATION_LIMIT: "2", DYN_MIGRATION_MAX_SEQ_LEN: "100" });
    expect([e.migrationLimit, e.migrationMaxSeqLen]).toEqual([2, 100]);
  });

  test("bad values are refused, each naming its flag", () => {
    for (const [argv, flag] of [
      [["--router-retries", "-1"], "--router-retries"],
      [["--router-retries", "two"], "--router-retries"],
      [["--worker-eject-after", "0"], "--worker-eject-after"],
      [["--migration-limit", "1.5"], "--migration-limit"],
      [["--migration-max-seq-len", "0"], "--migration-max-seq-len"],
    ] as const) {
      expect(thrownBy(ConfigError, () => load([...argv])).problems.join("\n")).toContain(flag);
    }
    expect(thrownBy(ConfigError, () => loadConfig({ ...mockerOptions, ...commonOptions }, { argv: ["--max-model-len", "0"], env: {} })).problems.join("\n")).toContain("--max-model-len");
  });

  test("the mocker's --max-model-len defaults to 131072 (Llama-3.1-8B's context)", () => {
    expect(loadConfig({ ...mockerOptions, ...commonOptions }, { argv: [], env: {} }).config.maxModelLen).toBe(131_072);
  });

  test("up hands the failure flags to its frontend and --max-model-len to its mockers", () => {
    const config = upConfigFrom(["--migration-limit", "1", "--router-retries", "4", "--worker-eject-after", "5", "--migration-max-seq-len", "900", "--worker-stall-timeout", "1.5", "--max-model-len", "4096"]);
    const p = plan(config, { self: ["/bin/kvcr"], ports: { agent: 9091, frontend: 8000, mockers: [7000] }, discoveryDir: "/d" });
    const frontend = p.processes.find((x) => x.role === "frontend")!.argv;
    const f = load(frontend.slice(2));
    expect([f.migrationLimit, f.routerRetries, f.workerEjectAfter, f.migrationMaxSeqLen, f.workerStallTimeout]).toEqual([1, 4, 5, 900, 1.5]);
    const mocker = p.processes.find((x) => x.role === "mocker")!.argv;
    expect(loadConfig({ ...mockerOptions, ...commonOptions }, { argv: mocker.slice(2), env: {} }).config.maxModelLen).toBe(4096);
  });
});
