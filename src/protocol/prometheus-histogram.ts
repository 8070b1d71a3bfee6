// A Prometheus histogram series (cumulative buckets, sum, count) and how each ecosystem prints its
// `le` bounds: vLLM's prometheus_client writes Python floats ("1.0", "2560.0"), Dynamo's Rust
// `prometheus` crate writes shortest decimals ("1", "0.0022"). Dashboards match `le` exactly
// (vLLM's TTFT-SLO panel selects le="1.0"), so the spelling is part of the contract.
import { labelText, type MetricFamily } from "./prometheus.ts";

export type LeStyle = "python" | "rust";

/** A bound as the exporter prints it; integers get ".0" in Python (repr of a float below 1e16). */
export function leText(bound: number, style: LeStyle): string {
  if (style === "python" && Number.isInteger(bound) && Math.abs(bound) < 1e16) return `${bound}.0`;
  return String(bound);
}

/** vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50, … while ≤ max (max itself is not added). */
export function buckets125(max: number): number[] {
  const out: number[] = [];
  for (let scale = 1; ; scale *= 10) {
    for (const m of [1, 2, 5]) {
      if (m * scale > max) return out;
      out.push(m * scale);
    }
  }
}

type Labels = Record<string, string>;

export class HistogramSeries {
  private readonly counts: Float64Array;
  private readonly les: string[];
  sum = 0;
  count = 0;

  constructor(
    private readonly bounds: readonly number[],
    style: LeStyle,
  ) {
    this.counts = new Float64Array(bounds.length);
    this.les = bounds.map((b) => leText(b, style));
  }

  observe(v: number, times = 1): void {
    this.sum += v * times;
    this.count += times;
    const b = this.bounds;
    for (let i = 0; i < b.length; i++) {
      if (v <= b[i]!) {
        this.counts[i]! += times;
        return;
      }
    }
  }

  /** Rendered label sets for one fixed label set: a rank's series are scraped many times. */
  private rendered: { key: Labels; buckets: string[]; plain: string } | undefined;

  /**
   * The same samples as samples(labels), with the label text rendered once per label set and
   * reused (a mocker with a thousand ranks scrapes ~300k series).
   */
  renderedSamples(labels: Labels): MetricFamily["samples"] {
    let r = this.rendered;
    if (r?.key !== labels) {
      const plain = labelText(labels);
      const head = plain === "" ? "{" : `${plain.slice(0, -1)},`;
      r = this.rendered = { key: labels, plain, buckets: [...this.les, "+Inf"].map((le) => `${head}le="${le}"}`) };
    }
    const out: MetricFamily["samples"] = [];
    let cumulative = 0;
    for (let i = 0; i < this.les.length; i++) {
      cumulative += this.counts[i]!;
      out.push({ suffix: "_bucket", labelText: r.buckets[i]!, value: cumulative });
    }
    out.push({ suffix: "_bucket", labelText: r.buckets[this.les.length]!, value: this.count });
    out.push({ suffix: "_sum", labelText: r.plain, value: this.sum }, { suffix: "_count", labelText: r.plain, value: this.count });
    return out;
  }

  /** Series samples with `labels` first and `le` last (as both client libraries print them). */
  samples(labels: Labels): MetricFamily["samples"] {
    const out: MetricFamily["samples"] = [];
    let cumulative = 0;
    for (let i = 0; i < this.les.length; i++) {
      cumulative += this.counts[i]!;
      out.push({ suffix: "_bucket", labels: { ...labels, le: this.les[i]! }, value: cumulative });
    }
    out.push({ suffix: "_bucket", labels: { ...labels, le: "+Inf" }, value: this.count });
    out.push({ suffix: "_sum", labels, value: this.sum }, { suffix: "_count", labels, value: this.count });
    return out;
  }
}

/** One histogram family with a series per label set (created on first use). */
export class HistogramVec {
  private readonly series = new Map<string, { labels: Labels; h: HistogramSeries }>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
    private readonly style: LeStyle,
  ) {}

  with(labels: Labels): HistogramSeries {
    const key = JSON.stringify(labels);
    let s = this.series.get(key);
    if (!s) this.series.set(key, (s = { labels, h: new HistogramSeries(this.bounds, this.style) }));
    return s.h;
  }

  family(): MetricFamily {
    const samples: MetricFamily["samples"] = [];
    for (const { labels, h } of this.series.values()) samples.push(...h.samples(labels));
    return { name: this.name, help: this.help, type: "histogram", samples };
  }
}
