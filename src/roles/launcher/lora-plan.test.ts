// up's LoRA flags: every mocker process gets --lora-modules; with --lora-replicas K each adapter is
// placed on exactly K of the stack's global workers (rendezvous), split over the processes.
import { describe, expect, test } from "bun:test";
import { commonOptions } from "../../config/common.ts";
import { loadConfig } from "../../config/load.ts";
import { parseLoraModules, parseModulesPerWorker } from "../../config/lora-modules.ts";
import { mockerOptions, mockerProblems, type MockerConfig } from "../../config/mocker.ts";
import { upConfigFrom, upOptions, upProblems, type UpConfig } from "../../config/up.ts";
import { ConfigError } from "../../lib/errors.ts";
import { thrownBy } from "../../../test/harness.ts";
import { plan, type PlanContext } from "./plan.ts";

const table = { ...upOptions, ...commonOptions };
const up = (...argv: string[]): UpConfig => loadConfig(table, { argv, env: {} }, upProblems).config;
const ctx = (mockers: number): PlanContext => ({ self: ["/bin/kvcr"], ports: { agent: 9091, frontend: 8000, mockers: Array.from({ length: mockers }, (_, i) => 7000 + i) }, discoveryDir: "/d" });
const mockerConfigOf = (argv: string[]) => loadConfig({ ...mockerOptions, ...commonOptions }, { argv: argv.slice(2), env: {} }, (c) => mockerProblems(c as MockerConfig)).config as MockerConfig;
const MODULES = ["--lora-modules", "a=/p/a", "b=/p/b", "c=/p/c"];

describe("up --lora-modules", () => {
  test("every mocker process loads every adapter without --lora-replicas", () => {
    const mockers = plan(up(...MODULES, "--mocker-processes=2"), ctx(2)).processes.filter((s) => s.role === "mocker").map((s) => mockerConfigOf(s.argv));
    for (const m of mockers) {
      expect(m.loraModules).toBe("a=/p/a b=/p/b c=/p/c");
      expect(m.loraModulesPerWorker).toBeUndefined();
    }
  });

  test("--lora-replicas 2 places each adapter on exactly 2 of the 8 global workers", () => {
    const mockers = plan(up(...MODULES, "--lora-replicas=2", "--mocker-processes=2", "--workers-per-process=4"), ctx(2)).processes.filter((s) => s.role === "mocker").map((s) => mockerConfigOf(s.argv));
    const perWorker = mockers.flatMap((m) => parseModulesPerWorker(m.loraModulesPerWorker!, parseLoraModules(m.loraModules!, m.modelName) as never, m.numWorkers) as { name: string }[][]);
    expect(perWorker.length).toBe(8);
    for (const name of ["a", "b", "c"]) expect(perWorker.filter((mods) => mods.some((m) => m.name === name)).length).toBe(2);
  });

  test("a prefill/decode stack places each adapter K times in each pool: both legs of its requests find a holder", () => {
    const mockers = plan(upConfigFrom([...MODULES, "--lora-replicas=1", "--prefill-workers=2", "--decode-workers=3", "--workers-per-process=1"]), ctx(5)).processes.filter((s) => s.role === "mocker").map((s) => mockerConfigOf(s.argv));
    const perWorker = mockers.flatMap((m) => parseModulesPerWorker(m.loraModulesPerWorker!, parseLoraModules(m.loraModules!, m.modelName) as never, m.numWorkers) as { name: string }[][]);
    expect(mockers.map((m) => m.disaggregationMode)).toEqual(["prefill", "prefill", "decode", "decode", "decode"]);
    for (const name of ["a", "b", "c"]) {
      const holders = perWorker.flatMap((mods, w) => (mods.some((m) => m.name === name) ? [w] : []));
      expect([holders.filter((w) => w < 2).length, holders.filter((w) => w >= 2).length]).toEqual([1, 1]);
    }
  });

  test("bad flags are refused, named", () => {
    const problems = (...argv: string[]) => [...thrownBy(ConfigError, () => up(...argv)).problems];
    expect(problems("--lora-replicas=2")).toEqual(["--lora-replicas: needs --lora-modules (the adapters it places)"]);
    expect(problems("--lora-modules", "a")).toEqual(['--lora-modules: got "a", expected name=path (or a JSON object {"name", "path", "base_model_name"})']);
    const mockerProblemsOf = (...argv: string[]) => [...thrownBy(ConfigError, () => mockerConfigOf(["x", "mocker", ...argv])).problems];
    expect(mockerProblemsOf("--lora-modules", "a=/p", "--lora-modules-per-worker", '[["z"]]')).toEqual(['--lora-modules-per-worker: worker 0: "z" is not an adapter of --lora-modules']);
    expect(mockerProblemsOf("--lora-modules-per-worker", "[[]]")).toEqual(["--lora-modules-per-worker: needs --lora-modules (the adapters it places)"]);
  });
});
