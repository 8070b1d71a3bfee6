import { describe, expect, test } from "bun:test";
import { ConfigError } from "../lib/errors.ts";
import { thrownBy } from "../../test/harness.ts";
import { commonOptions } from "./common.ts";
import { loadConfig } from "./load.ts";
import { mockerOptions, mockerProblems, type MockerConfig } from "./mocker.ts";

const table = { ...mockerOptions, ...commonOptions };
const load = (argv: string[]) => loadConfig(table, { argv, readFile: () => "" }, (c) => mockerProblems(c as MockerConfig)).config;
const problems = (argv: string[]) => [...thrownBy(ConfigError, () => load(argv)).problems];

describe("disaggregation flags", () => {
  test("agg by default; each side takes its own settings", () => {
    expect(load([]).disaggregationMode).toBe("agg");
    const d = load(["--disaggregation-mode", "decode", "--kv-transfer-bandwidth", "0", "--kv-transfer-timing-mode", "destination_missing"]);
    expect([d.disaggregationMode, d.kvTransferBandwidth, d.kvTransferTimingMode]).toEqual(["decode", 0, "destination_missing"]);
    const p = load(["--disaggregation-mode", "prefill", "--kv-transfer-hold-timeout", "2.5", "--kv-transfer-port", "0"]);
    expect([p.disaggregationMode, p.kvTransferHoldTimeout, p.kvTransferPort]).toEqual(["prefill", 2.5, 0]);
  });

  test("a setting of the other side, or of an aggregated worker, is refused naming both flags", () => {
    expect(problems(["--kv-transfer-bandwidth", "8"])).toEqual(["--kv-transfer-bandwidth: a decode worker's setting (it times the pull), contradicts --disaggregation-mode agg"]);
    const p = problems(["--disaggregation-mode", "prefill", "--kv-transfer-timing-mode", "full_prompt"]);
    expect(p.length).toBe(1);
    expect(p[0]).toContain("--kv-transfer-timing-mode");
    expect(p[0]).toContain("--disaggregation-mode prefill");
    const d = problems(["--disaggregation-mode", "decode", "--kv-transfer-hold-timeout", "1", "--kv-transfer-port", "5600"]);
    expect(d.map((x) => x.split(":")[0])).toEqual(["--kv-transfer-hold-timeout", "--kv-transfer-port"]);
    expect(problems(["--disaggregation-mode", "split"])[0]).toContain("agg, prefill, decode");
  });

  test("the transfer port clashing with another port is named", () => {
    const p = problems(["--disaggregation-mode", "prefill", "--kv-transfer-port", "8100", "--http-port", "8100"]);
    expect(p.some((x) => x.includes("--http-port") && x.includes("--kv-transfer-port"))).toBe(true);
  });
});
