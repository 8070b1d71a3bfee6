// `bench --url A,B,…`: requests go to each frontend in turn; one that refuses connections is passed
// over (its requests go to the next) and counted in the result's warnings, no request failing.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { createLogger } from "../../src/lib/logger.ts";
import { createBlockHasher } from "../../src/lib/xxh3.ts";
import { runBench } from "../../src/roles/bench/run-bench.ts";
import type { BenchDeps, BenchOptions } from "../../src/roles/bench/bench-types.ts";
import { benchOptionsFrom } from "../../src/roles/bench/options-from-config.ts";
import { benchOptions, benchProblems, type BenchConfig } from "../../src/config/bench.ts";
import { loadConfig } from "../../src/config/load.ts";
import { startFakeOpenAi } from "../fake-openai-server.ts";
import { heldPort } from "../harness.ts";

const deps = (): BenchDeps => ({
  hasher: createBlockHasher(),
  readFile: (p) => readFileSync(p, "utf8"),
  writeFile: () => {},
  checkWritable: () => {},
  stdout: { write: () => true },
  logger: createLogger({ level: "silent" }),
  now: () => performance.now(),
  sleep: (ms) => Bun.sleep(ms),
});

const options = (url: string): BenchOptions => {
  const argv = ["--url", url, "--model", "m", "--num-prompts", "12", "--max-concurrency", "2", "--num-prefixes", "2", "--prefix-tokens", "16", "--suffix-tokens", "4", "--output-tokens", "2"];
  return benchOptionsFrom(loadConfig(benchOptions, { argv, env: {} }, (c) => benchProblems(c as BenchConfig)).config as BenchConfig);
};

describe("bench --url A,B,…", () => {
  test("spreads requests over the frontends in turn", async () => {
    await using a = startFakeOpenAi({ ttftMs: 1, itlMs: 1 });
    await using b = startFakeOpenAi({ ttftMs: 1, itlMs: 1 });
    const { results } = await runBench(options(`${a.url},${b.url}/v1`), deps());
    expect(results[0]!.completed).toBe(12);
    expect([a.bodies.length, b.bodies.length]).toEqual([6, 6]);
    expect(results[0]!.warnings.filter((w) => w.includes("refused"))).toEqual([]);
  });

  test("a frontend that refuses connections is skipped and counted; no request fails", async () => {
    await using a = startFakeOpenAi({ ttftMs: 1, itlMs: 1 });
    const dead = heldPort();
    const deadUrl = `http://127.0.0.1:${dead.port}`;
    dead.close(); // nothing listens there now: connections are refused
    const { results } = await runBench(options(`${a.url},${deadUrl}`), deps());
    expect([results[0]!.completed, results[0]!.failed]).toEqual([12, 0]);
    expect(a.bodies.length).toBe(12);
    const refused = results[0]!.warnings.filter((w) => w.includes("refused"));
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatch(new RegExp(`^frontend ${deadUrl} refused [1-9]\\d* connection\\(s\\)`));
  });

  test("every URL of the list is checked, the bad one named", () => {
    const problems = (url: string) => benchProblems(loadConfig(benchOptions, { argv: ["--url", url], env: {} }).config as BenchConfig);
    expect(problems("http://a:1,ftp://b:2")).toEqual(['--url: got "http://a:1,ftp://b:2", expected an http(s) URL such as http://127.0.0.1:8000 (or several, comma-separated, to spread requests over)']);
    expect(problems("http://a:1/v1,http://b:2")).toEqual([]);
  });
});
