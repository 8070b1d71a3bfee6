// A replay report split by LoRA adapter: per adapter (null = the base model), its completed
// requests, prompt-cache reuse and TTFT (which includes any wait for the batch's adapter budget).
import type { WorkloadRequest } from "../workload/workload.ts";
import type { SimulationResult } from "./simulator.ts";
import { summarize } from "./stats.ts";

export interface AdapterFigures {
  lora_name: string | null;
  completed: number;
  prompt_tokens: number;
  cached_tokens: number;
  prefix_cache_reuse_ratio: number;
  mean_ttft_ms: number;
  p99_ttft_ms: number;
}

/** Figures per adapter, base model first, then adapters by name; undefined when the workload names none. */
export function splitByAdapter(sim: SimulationResult, workload: readonly WorkloadRequest[]): AdapterFigures[] | undefined {
  const groups = new Map<string | null, number[]>();
  let any = false;
  for (let i = 0; i < sim.numRequests; i++) {
    if (sim.errors.has(i)) continue;
    const name = workload[i]!.loraName ?? null;
    if (name !== null) any = true;
    let g = groups.get(name);
    if (g === undefined) groups.set(name, (g = []));
    g.push(i);
  }
  if (!any) return undefined;
  const names = [...groups.keys()].sort((a, b) => (a === null ? -1 : b === null ? 1 : a < b ? -1 : a > b ? 1 : 0));
  return names.map((name) => {
    const ids = groups.get(name)!;
    let prompt = 0, cached = 0;
    const ttft = new Float64Array(ids.length);
    ids.forEach((i, k) => {
      prompt += sim.promptTokens[i]!;
      cached += sim.cachedTokens[i]!;
      ttft[k] = sim.firstTokenMs[i]! - sim.arrivalMs[i]!;
    });
    const t = summarize(ttft);
    return { lora_name: name, completed: ids.length, prompt_tokens: prompt, cached_tokens: cached, prefix_cache_reuse_ratio: prompt > 0 ? cached / prompt : 0, mean_ttft_ms: t.mean, p99_ttft_ms: t.p99 };
  });
}
