import { describe, expect, test } from "bun:test";
import { ConfigError } from "../lib/errors.ts";
import { thrownBy } from "../../test/harness.ts";
import { loadConfig } from "./load.ts";
import { benchOptions, benchProblems, parsePercentiles, roundsOf, type BenchConfig } from "./bench.ts";

const load = (argv: string[]) => loadConfig(benchOptions, { argv, env: {} }, (c) => benchProblems(c as BenchConfig)).config;
const problems = (argv: string[]) => thrownBy(ConfigError, () => load(argv)).problems;

describe("bench options", () => {
  test("defaults: streaming token prompts to /v1/completions, fixed output lengths, p50/p90/p99", () => {
    const c = load(["--url", "http://127.0.0.1:8000"]);
    expect(c).toMatchObject({ endpoint: "/v1/completions", promptFormat: "tokens", stream: true, ignoreEos: true, percentiles: "50,90,99", workerHeader: "x-kvcr-worker", warmupRequests: 0 });
    expect(parsePercentiles("99.9,50,50")).toEqual([99.9, 50]);
  });

  test("router-mode comparisons need a URL per mode", () => {
    expect(load(["--compare-router-modes", "kv,round-robin", "--url-per-mode", "kv=http://a:1,round-robin=http://b:2"]).compareRouterModes).toBe("kv,round-robin");
    expect(problems(["--compare-router-modes", "kv,round-robin", "--url-per-mode", "kv=http://a:1"])).toEqual(["--url-per-mode: no URL for mode round-robin (got kv)"]);
    expect(problems(["--compare-router-modes", "kv,fastest", "--url-per-mode", "kv=http://a:1,fastest=x"])).toEqual([
      '--compare-router-modes: got "kv,fastest", expected a comma-separated list of kv, round-robin, random',
      '--url-per-mode: got "fastest=x", expected MODE=URL with MODE one of kv, round-robin, random and an http(s) URL',
    ]);
    expect(load(["--compare-router-modes", "kv,random", "--stack-config", "s.yaml"]).stackConfig).toBe("s.yaml");
    expect(problems(["--compare-router-modes", "kv,random", "--url", "http://a:1"])[0]).toContain("one URL is one router mode");
    expect(problems(["--url", "http://a:1", "--stack-config", "s.yaml"])).toEqual(["--stack-config: only for fresh stacks (drop --url / --url-per-mode)"]);
    expect(problems(["--url", "http://a:1", "--url-per-mode", "kv=http://a:1,rr=http://b:1"])).toEqual(["--url and --url-per-mode: give one (a comparison runs against each side's URL)"]);
  });

  test("--compare-urls NAME=URL,… (and --url-per-mode alone, its older name) and --compare-stacks NAME=FILE,…: named sides, 3 rounds for fresh stacks; what they refuse", () => {
    expect(load(["--compare-urls", "kv=http://a:1,sglang=http://b:2"]).compareUrls).toBe("kv=http://a:1,sglang=http://b:2");
    expect(roundsOf(load(["--compare-urls", "kv=http://a:1,sglang=http://b:2"]))).toBe(1);
    expect(load(["--url-per-mode", "mine=http://a:1,theirs=http://b:2"]).urlPerMode).toBe("mine=http://a:1,theirs=http://b:2");
    expect(problems(["--compare-urls", "kv=http://a:1"])).toEqual(["--compare-urls: got one side (kv), expected at least two to compare"]);
    expect(problems(["--compare-urls", "kv=http://a:1,kv=http://b:2"])).toEqual(["--compare-urls: the name kv is given twice; each side needs its own"]);
    expect(problems(["--compare-urls", "kv=a:1,=http://b:2"])).toEqual(['--compare-urls: got "kv=a:1", expected NAME=URL (NAME of letters, digits, . _ -)', '--compare-urls: got "=http://b:2", expected NAME=URL (NAME of letters, digits, . _ -)']);
    expect(problems(["--compare-urls", "a=http://a:1,b=http://b:2", "--url", "http://c:3"])).toEqual(["--url and --compare-urls: give one (a comparison runs against each side's URL)"]);
    expect(problems(["--compare-urls", "a=http://a:1,b=http://b:2", "--url-per-mode", "kv=http://a:1,random=http://b:1", "--compare-router-modes", "kv,random"])).toEqual(["--compare-urls and --url-per-mode: give one (--url-per-mode is its older name)"]);
    expect(problems(["--compare-urls", "a=http://a:1,b=http://b:2", "--stack-config", "s.yaml"])).toEqual(["--stack-config: only for fresh stacks (drop --compare-urls)"]);

    const file = import.meta.path; // any file that exists
    expect(roundsOf(load(["--compare-stacks", `kv=${file},sglang=${file}`]))).toBe(3);
    expect(roundsOf(load(["--compare-stacks", `kv=${file},sglang=${file}`, "--rounds", "5"]))).toBe(5);
    expect(problems(["--compare-stacks", `kv=${file},sglang=/no/such.yaml`])).toEqual(["--compare-stacks: sglang's stack file /no/such.yaml does not exist"]);
    expect(problems(["--compare-stacks", `kv=${file},b=${file}`, "--stack-config", file, "--compare-router-modes", "kv,random"])).toEqual([
      "--compare-stacks and --stack-config: each side's stack file says it all; compare one thing at a time (drop --stack-config)",
      "--compare-stacks and --compare-router-modes: each side's stack file says it all; compare one thing at a time (drop --compare-router-modes)",
    ]);
    expect(problems(["--compare-stacks", `kv=${file},b=${file}`, "--compare-urls", "a=http://a:1,b=http://b:2"])).toEqual(["--compare-stacks and --compare-urls: each side's stack file says it all; compare one thing at a time (drop --compare-urls)"]);
    expect(problems(["--compare-stacks", `kv=${file},b=${file}`, "--url", "http://a:1"])).toEqual(["--compare-stacks and --url: each side's stack file says it all; compare one thing at a time (drop --url)"]);
  });

  test("rounds: 3 for router modes on fresh stacks, 1 against running stacks, as given otherwise; only for comparisons", () => {
    expect(roundsOf(load(["--compare-router-modes", "kv,round-robin"]))).toBe(3);
    expect(roundsOf(load(["--compare-router-modes", "kv,round-robin", "--url-per-mode", "kv=http://a:1,round-robin=http://b:2"]))).toBe(1);
    expect(roundsOf(load(["--sweep-concurrency", "2,8"]))).toBe(1);
    expect(roundsOf(load(["--compare-router-modes", "kv,round-robin", "--rounds", "5"]))).toBe(5);
    expect(problems(["--url", "http://a:1", "--rounds", "3"])).toEqual(["--rounds: repeats the sides of a comparison; add --compare-stacks, --compare-urls, --compare-router-modes or --sweep-concurrency (--compare reads the rounds a result file holds)"]);
    expect(problems(["--compare-router-modes", "kv,round-robin", "--rounds", "0"])[0]).toContain("--rounds");
  });

  test("conflicting arrival and replay flags are named", () => {
    expect(problems(["--url", "http://a:1", "--sweep-concurrency", "8,32", "--concurrency", "4"])).toEqual(["--sweep-concurrency sets the concurrency of each point: drop --concurrency / --request-rate"]);
    expect(problems(["--url", "http://a:1", "--with-replay", "--duration", "5", "--concurrency", "2"])).toEqual(["--with-replay: the simulation runs the whole workload; use --requests instead of --duration"]);
    // --duration with nothing pacing the arrivals would send its whole generated workload at once.
    expect(problems(["--url", "http://a:1", "--duration", "5"])).toEqual(["--duration: arrivals all at once would send every request generated for the run at its start; pace them with --concurrency N or --request-rate R (or give --requests)"]);
    for (const pace of [["--concurrency", "2"], ["--request-rate", "10"], ["--max-concurrency", "3"], ["--requests", "50"]]) expect(() => load(["--url", "http://a:1", "--duration", "5", ...pace])).not.toThrow();
    expect(problems(["--url", "http://a:1", "--percentiles", "0,101"])).toEqual(['--percentiles: got "0" in "0,101", expected numbers above 0 and at most 100, comma-separated']);
    expect(problems(["--url", "http://a:1", "--endpoint", "v1/completions"])).toEqual(['--endpoint: got "v1/completions", expected a path starting with / (e.g. /v1/completions)']);
  });
});
