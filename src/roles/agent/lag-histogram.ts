// Ingest lag (now − batch ts, seconds) as a Prometheus histogram with fixed buckets, plus the
// quantile estimate bench/agent-scale.ts reports (upper bound of the bucket holding the quantile).
import type { MetricFamily } from "../../protocol/prometheus.ts";

export const LAG_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

export class LagHistogram {
  /** Per bucket (not cumulative); the last slot is +Inf. */
  readonly counts = new Float64Array(LAG_BUCKETS_S.length + 1);
  sum = 0;
  count = 0;

  observe(seconds: number): void {
    let i = 0;
    while (i < LAG_BUCKETS_S.length && seconds > LAG_BUCKETS_S[i]!) i++;
    this.counts[i]!++;
    this.sum += seconds;
    this.count++;
  }

  /** Upper bound of the bucket holding quantile q (Infinity past the last bucket; 0 when empty). */
  quantile(q: number): number {
    if (this.count === 0) return 0;
    const target = q * this.count;
    let seen = 0;
    for (let i = 0; i < this.counts.length; i++) {
      seen += this.counts[i]!;
      if (seen >= target) return i < LAG_BUCKETS_S.length ? LAG_BUCKETS_S[i]! : Number.POSITIVE_INFINITY;
    }
    return Number.POSITIVE_INFINITY;
  }

  family(name: string, help: string): MetricFamily {
    const samples: MetricFamily["samples"] = [];
    let cumulative = 0;
    LAG_BUCKETS_S.forEach((le, i) => {
      cumulative += this.counts[i]!;
      samples.push({ suffix: "_bucket", labels: { le: String(le) }, value: cumulative });
    });
    samples.push({ suffix: "_bucket", labels: { le: "+Inf" }, value: this.count });
    samples.push({ suffix: "_sum", value: this.sum });
    samples.push({ suffix: "_count", value: this.count });
    return { name, help, type: "histogram", samples };
  }
}
