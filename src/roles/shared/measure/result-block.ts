// The human result block of `vllm bench serve` (50 wide, "label:" padded to 40, "= title ="
// rules) and its one row list, in vLLM's order and spelling, that `replay` and `bench` both print;
// each adds its own rows where vLLM's list leaves room.
import { percentileKey, type ServingTotals } from "../../../core/replay/serving-figures.ts";

const WIDTH = 50;
const LABEL_WIDTH = 40;

export interface ResultBlock {
  /** A centred title in a rule of `fill` ("=" for the block's head, "-" for a section). */
  title(text: string, fill?: string): void;
  /** "label:" and the value; a whole number prints as is, any other number with 2 decimals. */
  row(label: string, value: string | number): void;
  /** Closes the block, lists the first failures shown and counts the rest; the block's text. */
  end(failuresShown: readonly string[], failed: number): string;
}

export function resultBlock(): ResultBlock {
  const lines: string[] = [];
  return {
    title(text, fill = "=") {
      const pad = Math.max(0, WIDTH - text.length - 2);
      lines.push(`${fill.repeat(Math.floor(pad / 2))} ${text} ${fill.repeat(Math.ceil(pad / 2))}`);
    },
    row(label, value) {
      lines.push(`${`${label}:`.padEnd(LABEL_WIDTH)}${typeof value === "number" && !Number.isInteger(value) ? value.toFixed(2) : value}`);
    },
    end(failuresShown, failed) {
      lines.push("=".repeat(WIDTH));
      for (const e of failuresShown) lines.push(`failed ${e}`);
      if (failed > failuresShown.length) lines.push(`… and ${failed - failuresShown.length} more failures`);
      return lines.join("\n") + "\n";
    },
  };
}

/** Each latency metric's section title and short name, as vLLM prints them. */
export const METRIC_NAMES = {
  ttft: { title: "Time to First Token", short: "TTFT" },
  tpot: { title: "Time per Output Token (excl. 1st token)", short: "TPOT" },
  itl: { title: "Inter-token Latency", short: "ITL" },
  e2el: { title: "End-to-end Latency", short: "E2EL" },
} as const;

/** What the serving rows read: the run's totals, prefix-cache reuse (null: not reported) and `{stat}_{metric}_ms`. */
export type ServingFigures = ServingTotals & { prefix_cache_reuse_ratio: number | null };

export type Row = readonly [label: string, value: string | number];

export interface ServingRowsOptions {
  /** Rows after the request counts (vLLM's place for "Maximum request concurrency"). */
  afterCounts?: readonly Row[];
  /** Rows after the prefix-cache reuse ratio. */
  afterCache?: readonly Row[];
  /** The percentiles each metric section lists (P99, P99.9, ...). */
  percentiles: readonly number[];
  /** Rows about the load client (its lag, its CPU), printed just before the latencies they can distort. */
  clientRows?: readonly Row[];
  /** Figure key → why the client could not resolve it: printed instead of the number. */
  unresolved?: Readonly<Record<string, string>>;
}

/** vLLM's result rows, with the prefix-cache reuse ratio after its throughputs, then one section per latency metric. */
export function servingRows(block: ResultBlock, f: ServingFigures, opts: ServingRowsOptions): void {
  const { title, row } = block;
  row("Successful requests", f.completed);
  row("Failed requests", f.failed);
  for (const [label, value] of opts.afterCounts ?? []) row(label, value);
  row("Benchmark duration (s)", f.duration.toFixed(2));
  row("Total input tokens", f.total_input_tokens);
  row("Total generated tokens", f.total_output_tokens);
  row("Request throughput (req/s)", f.request_throughput.toFixed(2));
  row("Output token throughput (tok/s)", f.output_throughput.toFixed(2));
  row("Total Token throughput (tok/s)", f.total_token_throughput.toFixed(2));
  row("Prefix cache reuse ratio", f.prefix_cache_reuse_ratio === null ? "n/a (server reports no cached_tokens)" : f.prefix_cache_reuse_ratio.toFixed(4));
  for (const [label, value] of opts.afterCache ?? []) row(label, value);
  if (opts.clientRows && opts.clientRows.length > 0) {
    title("Load client", "-");
    for (const [label, value] of opts.clientRows) row(label, value);
  }
  const ms = (key: string) => {
    const why = opts.unresolved?.[key];
    return why !== undefined ? `unresolved: ${why}` : (f as unknown as Record<string, number>)[key]!.toFixed(2);
  };
  for (const [metric, { title: name, short }] of Object.entries(METRIC_NAMES)) {
    title(name, "-");
    row(`Mean ${short} (ms)`, ms(`mean_${metric}_ms`));
    row(`Median ${short} (ms)`, ms(`median_${metric}_ms`));
    for (const q of opts.percentiles) row(`P${q} ${short} (ms)`, ms(percentileKey(q, metric)));
  }
}
