// What the chaos bench watches while it attacks a stack: a steady open-loop load on the frontend
// (requests failed, by error), one process's /health latency, and the frontend's index against the
// mockers' truth (precision and recall per sample, the audit's own comparison).
import { readResidency, readTruths } from "../../src/roles/shared/stack/stack-truth.ts";
import { auditPoint } from "../../src/core/audit/index-audit.ts";
import type { Residency } from "../../src/protocol/residency.ts";

export interface LoadReport {
  sent: number;
  failed: number;
  errors: Record<string, number>;
}

const PREFIXES = Array.from({ length: 8 }, (_, i) => `system prompt ${i}: ${"you are a careful assistant who answers briefly. ".repeat(12)}`);

/** Open loop at `ratePerS` chat requests on shared prefixes until stopped. */
export function driveLoad(frontendUrl: string, ratePerS: number): { stop(): Promise<LoadReport> } {
  const report: LoadReport = { sent: 0, failed: 0, errors: {} };
  const inFlight = new Set<Promise<void>>();
  let n = 0;
  const one = async (k: number) => {
    try {
      const res = await fetch(`${frontendUrl}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "mock-model", max_tokens: 8, messages: [{ role: "user", content: `${PREFIXES[k % PREFIXES.length]} question ${k}` }] }),
        signal: AbortSignal.timeout(30_000),
      });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${text.slice(0, 80)}`);
    } catch (err) {
      report.failed++;
      const key = (err as Error).message.slice(0, 100);
      report.errors[key] = (report.errors[key] ?? 0) + 1;
    }
  };
  const timer = setInterval(() => {
    report.sent++;
    const p = one(n++).finally(() => inFlight.delete(p));
    inFlight.add(p);
  }, 1000 / ratePerS);
  return {
    stop: async () => {
      clearInterval(timer);
      await Promise.all(inFlight);
      return report;
    },
  };
}

export interface HealthReport {
  probes: number;
  maxMs: number;
  overOneSecond: number;
  failed: number;
}

/** GET `url` every 100 ms (5 s deadline each), timing each answer. */
export function watchHealth(url: string): { stop(): Promise<HealthReport> } {
  const r: HealthReport = { probes: 0, maxMs: 0, overOneSecond: 0, failed: 0 };
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const t0 = performance.now();
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
        await res.arrayBuffer();
        if (res.status >= 500 && res.status !== 503) r.failed++;
      } catch {
        r.failed++;
      }
      const ms = performance.now() - t0;
      r.probes++;
      r.maxMs = Math.max(r.maxMs, ms);
      if (ms > 1000) r.overOneSecond++;
      await Bun.sleep(100);
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      return r;
    },
  };
}

export interface IndexSample {
  t_s: number;
  precision: number;
  recall: number;
}

/** Samples the frontend's index against the mockers' truth every `everyMs`. */
export function watchIndex(frontendUrl: string, mockers: () => string[], t0: number, everyMs = 250): { samples: IndexSample[]; stop(): Promise<void> } {
  const samples: IndexSample[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      try {
        const before = await readResidency(`${frontendUrl}/v1/index`);
        const t_s = (performance.now() - t0) / 1000;
        const truth: Residency = { sources: (await readTruths(mockers())).flatMap((d) => d?.sources ?? []) };
        await Bun.sleep(50); // events in transit at the truth read arrive (as the audit does)
        const after = await readResidency(`${frontendUrl}/v1/index`);
        const p = auditPoint({ t_s, truth, indexBefore: before, indexAfter: after });
        samples.push({ t_s, precision: p.precision, recall: p.recall });
      } catch {
        samples.push({ t_s: (performance.now() - t0) / 1000, precision: 0, recall: 0 });
      }
      await Bun.sleep(everyMs);
    }
  })();
  return {
    samples,
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

/** Seconds from `fromS` until the index is exact (both ≥ 0.99) and stays so; null if it never is. */
export function recoveredAfter(samples: readonly IndexSample[], fromS: number): number | null {
  const after = samples.filter((s) => s.t_s >= fromS);
  let firstGood: number | null = null;
  for (const s of after) {
    const good = s.precision >= 0.99 && s.recall >= 0.99;
    if (good && firstGood === null) firstGood = s.t_s;
    if (!good) firstGood = null;
  }
  return firstGood === null ? null : Math.max(0, firstGood - fromS);
}
