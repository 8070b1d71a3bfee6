// `up --prometheus-config FILE`: a Prometheus scrape config naming the running stack's /metrics
// endpoints (agent, each mocker process, frontend) at the ports they actually got, written once the
// stack is ready. Pure text builder plus an atomic write (tmp file, rename); the file stays after
// the stack stops, like any config a user points Prometheus at.
import { rename, rm, writeFile } from "node:fs/promises";

export interface ScrapeTarget {
  /** The process name in `up`'s logs and state file (agent, mocker-0, frontend). */
  name: string;
  role: string;
  /** The process's HTTP base URL. */
  url: string;
}

/** One job per role (kvcr-agent, kvcr-mocker, kvcr-frontend), one static target group per process. */
export function prometheusScrapeConfig(targets: readonly ScrapeTarget[], opts: { scrapeIntervalS?: number } = {}): string {
  const lines = [
    "# Prometheus scrape config for a kvcr-mock stack, written by `kvcr-mock up --prometheus-config`.",
    "global:",
    `  scrape_interval: ${opts.scrapeIntervalS ?? 5}s`,
    "scrape_configs:",
  ];
  const roles = [...new Set(targets.map((t) => t.role))];
  for (const role of roles) {
    lines.push(`  - job_name: kvcr-${role}`, "    metrics_path: /metrics", "    static_configs:");
    for (const t of targets.filter((x) => x.role === role)) {
      const host = new URL(t.url).host;
      lines.push(`      - targets: [${JSON.stringify(host)}]`, `        labels: { process: ${JSON.stringify(t.name)} }`);
    }
  }
  return lines.join("\n") + "\n";
}

export async function writePrometheusConfig(path: string, targets: readonly ScrapeTarget[]): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    await writeFile(tmp, prometheusScrapeConfig(targets));
    await rename(tmp, path);
  } finally {
    await rm(tmp, { force: true });
  }
}
