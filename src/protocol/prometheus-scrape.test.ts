import { describe, expect, test } from "bun:test";
import { scrapeSamples, sumOf } from "./prometheus-scrape.ts";

describe("reading a Prometheus exposition", () => {
  test("samples with labels (escapes included), timestamps, +Inf; comments and unreadable lines skipped", () => {
    const text = [
      "# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.",
      "# TYPE vllm:prefix_cache_hits_total counter",
      'vllm:prefix_cache_hits_total{engine="0",model_name="m"} 128.0',
      'vllm:prefix_cache_hits_total{engine="1",model_name="m"} 64 1700000000000',
      'vllm:cache_config_info{block_size="16",num_gpu_blocks="2048",note="a \\"quoted\\" word"} 1.0',
      'vllm:time_to_first_token_seconds_bucket{le="+Inf"} 7',
      "not a sample line at all {",
      "",
    ].join("\n");
    const s = scrapeSamples(text);
    expect(s).toHaveLength(4);
    expect(sumOf(s, "vllm:prefix_cache_hits_total")).toBe(192);
    expect(s[2]!.labels).toEqual({ block_size: "16", num_gpu_blocks: "2048", note: 'a "quoted" word' });
    expect(sumOf(s, "vllm:absent_total")).toBe(0);
  });
});
