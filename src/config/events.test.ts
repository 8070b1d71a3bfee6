import { describe, expect, test } from "bun:test";
import { ConfigError } from "../lib/errors.ts";
import { thrownBy } from "../../test/harness.ts";
import { commonOptions } from "./common.ts";
import { eventsOptions, eventsProblems, replayStartSeq } from "./events.ts";
import { loadConfig } from "./load.ts";

const table = { ...eventsOptions, ...commonOptions };
const load = (...argv: string[]) => loadConfig(table, { argv: ["--endpoint", "tcp://127.0.0.1:5557", ...argv] }, eventsProblems).config;
const problemsOf = (...argv: string[]): string[] => [...thrownBy(ConfigError, () => load(...argv)).problems];
const MAX_U64 = 2n ** 64n - 1n;

describe("events config: --from-seq is a u64", () => {
  test("taken as decimal text and parsed exactly, up to 2^64-1 (no float rounding)", () => {
    const replay = ["--replay", "tcp://127.0.0.1:5558"];
    expect(replayStartSeq(load(...replay, "--from-seq", MAX_U64.toString()))).toBe(MAX_U64);
    expect(replayStartSeq(load(...replay, "--from-seq", "9007199254740993"))).toBe(9007199254740993n); // 2^53+1
    expect(replayStartSeq(load(...replay, "--from-seq", "0"))).toBe(0n);
    expect(replayStartSeq(load(...replay))).toBe(0n);
    expect(replayStartSeq(load())).toBeUndefined();
  });

  test.each(["18446744073709551616", "99999999999999999999", "-1", "1.5", "1e3", "abc", " 7", "0x10"])("%p is refused naming the flag, the value and the range", (text) => {
    expect(problemsOf("--replay", "tcp://127.0.0.1:5558", "--from-seq", text)).toEqual([
      `--from-seq: got ${JSON.stringify(text)}, expected a decimal integer from 0 to 18446744073709551615`,
    ]);
  });
});

describe("events config: --replay-timeout-ms", () => {
  test("at most 2^31-1 ms, the longest delay setTimeout honours (above it fires after 1 ms)", () => {
    expect(load("--replay-timeout-ms", "2147483647").replayTimeoutMs).toBe(2_147_483_647);
    expect(problemsOf("--replay-timeout-ms", "2147483648")).toEqual(["--replay-timeout-ms: got 2147483648, expected an integer from 1 to 2147483647"]);
  });
});

describe("events config: endpoints", () => {
  test("a malformed HOST is refused before anything dials it", () => {
    expect(loadProblems("--endpoint", "tcp://a b:5557", "--replay", "tcp://[::1:5558")).toEqual([
      '--endpoint: got "tcp://a b:5557", HOST "a b" is not a hostname, IPv4 or IPv6 address (bad character " "); expected tcp://HOST:PORT, e.g. tcp://127.0.0.1:5557',
      '--replay: got "tcp://[::1:5558", HOST "[::1" has an unbalanced bracket; IPv6 goes in brackets: tcp://[::1]:5557; expected tcp://HOST:PORT, e.g. tcp://127.0.0.1:5557',
    ]);
  });
});

const loadProblems = (...argv: string[]): string[] => [...thrownBy(ConfigError, () => loadConfig(table, { argv }, eventsProblems)).problems];
