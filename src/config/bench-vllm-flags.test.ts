// `vllm bench serve`'s flag names on `kvcr-mock bench`: aliases parse to the same config as our
// own spellings, vLLM-only flags resolve to the bench's options, and a misspelt flag is answered
// with the nearest known name.
import { describe, expect, test } from "bun:test";
import { ConfigError } from "../lib/errors.ts";
import { thrownBy } from "../../test/harness.ts";
import { benchOptionsFrom } from "../roles/bench/options-from-config.ts";
import { commonOptions } from "./common.ts";
import { loadConfig } from "./load.ts";
import { benchOptions, benchProblems, parseGoodput, targetUrl, type BenchConfig } from "./bench.ts";

const load = (argv: string[]) => loadConfig(benchOptions, { argv, env: {} }, (c) => benchProblems(c as BenchConfig)).config as BenchConfig;
const problems = (argv: string[]) => thrownBy(ConfigError, () => load(argv)).problems;
const url = ["--url", "http://127.0.0.1:8000"];

describe("vLLM's flag names", () => {
  test("aliases parse to the same config as the bench's own spellings", () => {
    const pairs: [string[], string[]][] = [
      [["--num-prompts", "7"], ["--requests", "7"]],
      [["--num-warmups", "2"], ["--warmup-requests", "2"]],
      [["--metric-percentiles", "50,99"], ["--percentiles", "50,99"]],
      [["--prefix-repetition-prefix-len", "64", "--prefix-repetition-suffix-len", "8", "--prefix-repetition-num-prefixes", "3", "--prefix-repetition-output-len", "5"], ["--prefix-tokens", "64", "--suffix-tokens", "8", "--num-prefixes", "3", "--output-tokens", "5"]],
    ];
    for (const [vllm, ours] of pairs) expect(load([...url, ...vllm])).toEqual(load([...url, ...ours]));
    expect(load(["--base-url", "http://h:1"])).toEqual(load(["--url", "http://h:1"]));
    // A config file takes vLLM's snake_case names too.
    const fromFile = loadConfig({ ...benchOptions, ...commonOptions }, { argv: ["--config", "c.yaml"], env: {}, readFile: () => "base_url: http://h:1\nnum_prompts: 9\n" }).config;
    expect(fromFile).toMatchObject({ url: "http://h:1", requests: 9 });
  });

  test("a problem names the flag as typed", () => {
    expect(problems([...url, "--num-prompts", "0"])).toEqual(["--num-prompts: got 0, expected an integer ≥ 1"]);
  });

  test("--request-rate inf, --goodput KEY:MS pairs, --header / --metadata KEY=VALUE lists", () => {
    expect(load([...url, "--request-rate", "inf"]).requestRate).toBe(Infinity);
    const c = load([...url, "--goodput", "ttft:500", "tpot:50", "e2el:2000", "--metadata", "tp=1", "gpu=none", "--seed", "3"]);
    expect(parseGoodput(c.goodput!)).toEqual({ ttft: 500, tpot: 50, e2el: 2000 });
    expect(c.seed).toBe(3);
    expect(problems([...url, "--goodput", "itl:5"])[0]).toStartWith('--goodput: got "itl:5", expected KEY:MS pairs');
    expect(problems([...url, "--header", "novalue"])).toEqual(['--header: got "novalue", expected KEY=VALUE']);
    expect(problems([...url, "--burstiness", "0.5"])).toEqual(["--burstiness: shapes the gaps of --request-rate arrivals; give a finite --request-rate"]);
    expect(problems([...url, "--percentile-metrics", "ttft,latency"])[0]).toStartWith('--percentile-metrics: got "latency"');
  });

  test("datasets that need a file or a tokenizer are refused with a reason", () => {
    expect(problems([...url, "--dataset-name", "sharegpt"])[0]).toStartWith("--dataset-name: --dataset-name sharegpt: needs a dataset file or a tokenizer");
  });

  test("--url with a trailing /v1, or --host/--port, name the same server", () => {
    expect(targetUrl({ url: "http://h:8000/v1" })).toBe("http://h:8000");
    expect(targetUrl({ url: "http://h:8000/v1/" })).toBe("http://h:8000");
    expect(targetUrl({ url: "http://h:8000/api" })).toBe("http://h:8000/api");
    expect(targetUrl({ host: "10.0.0.2" })).toBe("http://10.0.0.2:8000");
    expect(targetUrl({ port: 9000 })).toBe("http://127.0.0.1:9000");
    expect(targetUrl({ host: "::1", port: 1 })).toBe("http://[::1]:1");
    expect(benchOptionsFrom(load(["--url", "http://h:8000/v1"])).targets).toEqual([{ url: "http://h:8000" }]);
    expect(problems(["--url", "http://h:1", "--port", "2"])).toEqual(["--url and --host/--port: give one (the target is --url, or http://HOST:PORT)"]);
  });

  test("a vllm bench serve command line resolves to the bench's options", () => {
    const argv = ["--backend", "openai-chat", "--host", "127.0.0.1", "--port", "8001", "--model", "m", "--served-model-name", "served", "--tokenizer", "some/tokenizer", "--dataset-name", "random", "--random-input-len", "64", "--random-output-len", "8", "--random-range-ratio", "0.5", "--random-prefix-len", "16", "--num-prompts", "50", "--request-rate", "4", "--burstiness", "0.5", "--max-concurrency", "3", "--goodput", "ttft:100", "--save-result", "--save-detailed", "--result-dir", "out", "--percentile-metrics", "ttft,e2el", "--ignore-eos", "--disable-tqdm", "--temperature", "0.7", "--top-k", "5", "--extra-body", '{"top_k": 9}', "--header", "x-a=1"];
    const o = benchOptionsFrom(load(argv));
    expect(o).toMatchObject({
      targets: [{ url: "http://127.0.0.1:8001" }],
      model: "m",
      servedModelName: "served",
      backend: "openai-chat",
      endpoint: "/v1/chat/completions",
      promptFormat: "text",
      tokenizerId: "some/tokenizer",
      requestRate: 4,
      burstiness: 0.5,
      maxInFlight: 3,
      goodput: { ttft: 100 },
      percentileMetrics: ["ttft", "e2el"],
      saveDetailed: true,
      saveResult: { dir: "out", append: false },
      headers: { "x-a": "1" },
      bodyExtra: { temperature: 0.7, top_k: 9 },
    });
    expect(o.workload).toMatchObject({ requests: 50, random: { inputLen: 64, outputLen: 8, prefixLen: 16, rangeRatio: 0.5 } });
    // Without --dataset-name, a --random-* flag picks the random dataset (vLLM's default dataset).
    expect(benchOptionsFrom(load([...url, "--random-input-len", "10"])).workload.random).toEqual({ inputLen: 10, outputLen: 128, prefixLen: 0, rangeRatio: 0 });
    expect(benchOptionsFrom(load(url)).workload.random).toBeUndefined();
    // --max-concurrency alone is a closed loop.
    expect(benchOptionsFrom(load([...url, "--max-concurrency", "4"]))).toMatchObject({ maxConcurrency: 4, maxInFlight: undefined });
  });

  test("no-op flags are accepted", () => {
    expect(() => load([...url, "--tokenizer-mode", "auto", "--skip-tokenizer-init", "--trust-remote-code", "--ready-check-timeout-sec", "0", "--request-id-prefix", "b-", "--disable-shuffle", "--no-oversample", "--skip-chat-template"])).not.toThrow();
  });

  test("an unknown flag is answered with the nearest known name, and only a close one", () => {
    expect(problems([...url, "--max-concurency", "4"])).toEqual(["--max-concurency: unknown flag; did you mean --max-concurrency? (see --help for the flags this command takes)"]);
    expect(problems([...url, "--num-prompt=4"])[0]).toContain("did you mean --num-prompts?");
    expect(problems([...url, "--zzzzzzzz=4"])[0]).toBe("--zzzzzzzz: unknown flag (see --help for the flags this command takes)");
    // Another word, not a typo: no "did you mean --prefix-tokens?".
    expect(problems([...url, "--prefix-caching", "2"])).toEqual(["--prefix-caching: unknown flag (see --help for the flags this command takes)"]);
  });
});

test("--random-* flags beside another workload are refused, not silently unused", () => {
  const problems = (argv: string[]) => {
    try {
      load(argv);
      return "";
    } catch (err) {
      return thrownBy(ConfigError, () => {
        throw err;
      }).problems.join("\n");
    }
  };
  expect(problems(["--url", "http://x", "--trace", "t.jsonl", "--random-input-len", "10"])).toContain("--random-input-len: only shape --dataset-name random; --trace runs another workload");
  expect(problems(["--url", "http://x", "--dataset-name", "prefix_repetition", "--input-len", "5", "--random-range-ratio", "0.5"])).toContain("--random-range-ratio, --input-len: only shape --dataset-name random");
  expect(problems(["--url", "http://x", "--dataset-name", "random", "--random-input-len", "10"])).toBe("");
});
