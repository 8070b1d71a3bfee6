import { expect, test } from "bun:test";
import { resultBlock, servingRows, type ServingFigures } from "./result-block.ts";

test("the vLLM result block: centred titles, labels padded to 40, whole numbers as is, failures after the rule", () => {
  const { title, row, end } = resultBlock();
  title("Run");
  row("Count", 3);
  row("Rate", 2.345);
  title("Part", "-");
  row("Text", "n/a");
  expect(end(["request 1: boom"], 3).split("\n")).toEqual([
    `${"=".repeat(22)} Run ${"=".repeat(23)}`,
    `${"Count:".padEnd(40)}3`,
    `${"Rate:".padEnd(40)}2.35`,
    `${"-".repeat(22)} Part ${"-".repeat(22)}`,
    `${"Text:".padEnd(40)}n/a`,
    "=".repeat(50),
    "failed request 1: boom",
    "… and 2 more failures",
    "",
  ]);
});

test("vLLM's serving rows in its order and spelling, the caller's rows where it leaves room, one section per metric", () => {
  const figures: Record<string, number | null> = {
    completed: 2, failed: 1, duration: 1.5, total_input_tokens: 30, total_output_tokens: 8,
    request_throughput: 4 / 3, output_throughput: 16 / 3, total_token_throughput: 76 / 3, prefix_cache_reuse_ratio: null,
  };
  for (const m of ["ttft", "tpot", "itl", "e2el"]) for (const k of ["mean", "median", "p99"]) figures[`${k}_${m}_ms`] = 1;
  const block = resultBlock();
  servingRows(block, figures as unknown as ServingFigures, { afterCounts: [["Maximum request concurrency", 4]], afterCache: [["Extra", "x"]], percentiles: [99] });
  const labels = block.end([], 0).split("\n").map((l) => l.split(":")[0]!.trim());
  expect(labels.slice(0, 12)).toEqual([
    "Successful requests", "Failed requests", "Maximum request concurrency", "Benchmark duration (s)", "Total input tokens", "Total generated tokens",
    "Request throughput (req/s)", "Output token throughput (tok/s)", "Total Token throughput (tok/s)", "Prefix cache reuse ratio", "Extra",
    `${"-".repeat(14)} Time to First Token ${"-".repeat(15)}`,
  ]);
  expect(labels.slice(12, 15)).toEqual(["Mean TTFT (ms)", "Median TTFT (ms)", "P99 TTFT (ms)"]);
  expect(labels.filter((l) => l.startsWith("-")).length).toBe(4);
});
