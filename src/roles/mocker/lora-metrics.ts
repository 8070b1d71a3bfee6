// LoRA metrics of a mocker: vLLM's `vllm:lora_requests_info` (a gauge whose value is the unix time
// its label set was last seen, labels max_lora, running_lora_adapters, waiting_lora_adapters as
// comma-joined names; like prometheus_client, earlier label sets stay, so a bounded history is kept
// per worker), and per-adapter request counts only kvcr-mock has (kvcr_mocker_lora_*).
import type { MetricFamily } from "../../protocol/prometheus.ts";
import type { LoraAdapters } from "./lora-adapters.ts";

/** The engines the metrics read: per worker, its ranks' LoRA state. */
export interface LoraRankView {
  worker: number;
  workerId: string;
  rank: number;
  engine: { loraState(): { running: Map<string, number>; waiting: Map<string, number> } };
}

/** Label sets kept per worker (vLLM keeps every one it ever set; a bound keeps a long run's scrape small). */
const HISTORY = 32;

export class LoraMetrics {
  /** Per worker: label-set key → [labels, last seen unix seconds], oldest first. */
  private readonly seen = new Map<number, Map<string, [Record<string, string>, number]>>();

  constructor(
    private readonly adapters: LoraAdapters,
    private readonly maxLoras: number,
    private readonly wallSeconds: () => number,
  ) {}

  /** `scope` "worker": one worker's API (vLLM's labels only); "process": every worker, labelled `worker`. */
  families(ranks: readonly LoraRankView[], scope: "process" | "worker"): MetricFamily[] {
    if (!this.adapters.enabled) return [];
    const byWorker = new Map<number, LoraRankView[]>();
    for (const r of ranks) {
      const list = byWorker.get(r.worker);
      if (list === undefined) byWorker.set(r.worker, [r]);
      else list.push(r);
    }
    const info: MetricFamily = { name: "vllm:lora_requests_info", type: "gauge", help: "Running stats on lora requests.", samples: [] };
    const running: MetricFamily = { name: "kvcr_mocker_lora_running_requests", type: "gauge", help: "Requests running per LoRA adapter", samples: [] };
    const waiting: MetricFamily = { name: "kvcr_mocker_lora_waiting_requests", type: "gauge", help: "Requests waiting per LoRA adapter (a request for an adapter beyond --max-loras waits)", samples: [] };
    const now = this.wallSeconds();
    for (const [worker, views] of byWorker) {
      const run = new Set<string>();
      const wait = new Set<string>();
      for (const v of views) {
        const s = v.engine.loraState();
        for (const [name, n] of s.running) {
          run.add(name);
          running.samples.push({ labels: { worker: v.workerId, dp_rank: v.rank, lora_name: name }, value: n });
        }
        for (const [name, n] of s.waiting) {
          wait.add(name);
          waiting.samples.push({ labels: { worker: v.workerId, dp_rank: v.rank, lora_name: name }, value: n });
        }
      }
      const labels: Record<string, string> = { max_lora: String(this.maxLoras), running_lora_adapters: [...run].sort().join(","), waiting_lora_adapters: [...wait].sort().join(",") };
      if (scope === "process") labels.worker = views[0]!.workerId;
      const key = `${labels.running_lora_adapters}\u0000${labels.waiting_lora_adapters}`;
      let history = this.seen.get(worker);
      if (history === undefined) this.seen.set(worker, (history = new Map()));
      history.delete(key);
      history.set(key, [labels, now]);
      while (history.size > HISTORY) history.delete(history.keys().next().value!);
      for (const [l, t] of history.values()) info.samples.push({ labels: l, value: t });
    }
    if (scope === "worker") return [info];
    const total: MetricFamily = { name: "kvcr_mocker_lora_requests_total", type: "counter", help: "Requests submitted per LoRA adapter since start (all workers)", samples: [] };
    for (const [name, n] of this.adapters.requests) total.samples.push({ labels: { lora_name: name }, value: n });
    return [info, running, waiting, total];
  }
}
