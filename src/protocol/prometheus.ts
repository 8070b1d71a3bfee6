// Prometheus text exposition format (version 0.0.4) for /metrics on every role.

export type MetricType = "counter" | "gauge" | "histogram";

export interface MetricFamily {
  name: string;
  help: string;
  type: MetricType;
  /**
   * `suffix` names a histogram's series (`_bucket`, `_sum`, `_count`). `labelText` is the label set
   * already rendered by `labelText()` (`{a="b"}`), for exporters with many series per scrape.
   */
  samples: { labels?: Record<string, string | number>; labelText?: string; value: number; suffix?: string }[];
}

export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** Families sharing a name (e.g. one per worker) are merged into one block, as the format requires. */
export function renderMetrics(families: readonly MetricFamily[]): string {
  const byName = new Map<string, MetricFamily>();
  for (const f of families) {
    const seen = byName.get(f.name);
    if (seen) byName.set(f.name, { ...seen, samples: [...seen.samples, ...f.samples] });
    else byName.set(f.name, f);
  }
  const lines: string[] = [];
  for (const f of byName.values()) {
    lines.push(`# HELP ${f.name} ${f.help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}`, `# TYPE ${f.name} ${f.type}`);
    for (const s of f.samples) lines.push(`${f.name}${s.suffix ?? ""}${s.labelText ?? labelText(s.labels)} ${formatValue(s.value)}`);
  }
  return lines.join("\n") + "\n";
}

/** A label set as exposition text: `{a="b",c="d"}` with values escaped, "" when empty. */
export function labelText(labels: Record<string, string | number> | undefined): string {
  if (!labels) return "";
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${String(v).replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`);
  return parts.length ? `{${parts.join(",")}}` : "";
}

function formatValue(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return String(v);
}
