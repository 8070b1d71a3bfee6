// Every role's /metrics on a small stack in one process (agent + a state-agent-mode mocker with two
// workers + frontend, after a few requests) parses as valid Prometheus text, and every metric the
// example Grafana dashboard queries is exported by some role.
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { openFileDiscoveryStore } from "../../src/discovery/file-store.ts";
import { start as startAgent } from "../../src/roles/agent/start.ts";
import { startFrontend } from "../../src/roles/frontend/start.ts";
import { startMocker } from "../../src/roles/mocker/index.ts";
import { cleanupList, makeTempDir, REPO_ROOT, waitFor, withTimeout } from "../harness.ts";
import { parsePrometheusText, seriesNames } from "../prometheus-text.ts";
import { agentConfig } from "./agent-kit.ts";
import { frontendConfig } from "./frontend-kit.ts";
import { logger, mockerConfig } from "./mocker-kit.ts";

const cleanups = cleanupList();
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Dashboard {
  panels: { title: string; targets: { expr: string }[] }[];
  templating: { list: { type: string; query?: unknown }[] };
}

/** The metric names a PromQL expression reads (every family kvcr-mock serves has one of these prefixes). */
function metricNames(expr: string): string[] {
  return [...expr.matchAll(/(?<![\w:])((?:vllm:|dynamo_|kvcr_)[A-Za-z0-9_:]*)/g)].map((m) => m[1]!);
}

describe("the stack's /metrics and the example dashboard", () => {
  test("every role's exposition is valid and covers every dashboard query", async () => {
    const tmp = await makeTempDir("kvcr-dash-");
    cleanups.push(() => tmp[Symbol.asyncDispose]());
    const shared = ["--namespace", "dash", "--discovery-dir", tmp.path];
    const store = await openFileDiscoveryStore({ dir: tmp.path, pollIntervalMs: 25, logger });
    cleanups.push(() => store.close());
    const agent = await startAgent(agentConfig(["--port", "0", ...shared]), { logger, discovery: store });
    cleanups.push(() => agent.close());
    const mocker = await startMocker(
      mockerConfig([
        "--num-workers", "2", "--block-size", "4", "--num-gpu-blocks-override", "64", "--num-host-blocks", "64", "--speedup-ratio", "20", "--model-name", "m",
        "--kv-state-agent", "--zmq-kv-events-ports", "0,0", "--kv-state-agent-raw-host", "127.0.0.1", "--kv-state-agent-cache-slot", "0", ...shared,
      ]),
      { logger, env: {}, discovery: store },
    );
    cleanups.push(() => mocker.close());
    await withTimeout(mocker.ready, 10_000, "mocker registration");
    const fe = await startFrontend(frontendConfig(["--http-port", "0", "--router-mode", "kv", ...shared]), { logger, discovery: store });
    cleanups.push(() => fe.close());
    await waitFor(() => fe.state.workerCount === 2 && fe.agents.liveCount() === 1, { what: "frontend with 2 workers following the agent", timeoutMs: 10_000 });

    // Streamed requests (ITL comes from the stream), one prompt sent twice (a prefix hit).
    for (const prompt of [[1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 2, 3, 4, 5, 6, 7, 8, 9], [20, 21, 22, 23, 24]]) {
      const res = await fetch(`${fe.url}/v1/completions`, { method: "POST", body: JSON.stringify({ model: "m", prompt, max_tokens: 4, stream: true }) });
      expect(res.status).toBe(200);
      await res.text();
    }

    const exported = new Set<string>();
    for (const [role, url] of [["agent", agent.httpUrl], ["mocker", mocker.httpUrl], ["frontend", fe.url]] as const) {
      const res = await fetch(`${url}/metrics`);
      expect(res.headers.get("content-type"), role).toContain("text/plain; version=0.0.4");
      const families = parsePrometheusText(await res.text()); // throws, naming the line, on invalid exposition
      for (const f of families.values()) {
        expect(f.help.length, `${role} ${f.name} HELP`).toBeGreaterThan(0);
        // Counters are scraped with _total (vLLM's through prometheus_client, Dynamo's and ours by name).
        if (f.type === "counter") expect(f.name, role).toEndWith("_total");
        for (const name of seriesNames(f)) exported.add(name);
      }
    }

    const dashboard = JSON.parse(readFileSync(join(REPO_ROOT, "examples/grafana/kvcr-mock-dashboard.json"), "utf8")) as Dashboard;
    expect(dashboard.panels.length).toBeGreaterThan(10);
    const queried = [
      ...dashboard.panels.flatMap((p) => p.targets.map((t) => [p.title, t.expr] as const)),
      ...dashboard.templating.list.flatMap((v) => (v.type === "query" ? [["variables", JSON.stringify(v.query)] as const] : [])),
    ];
    for (const [title, expr] of queried) {
      const names = metricNames(expr);
      expect(names.length, `${title}: ${expr}`).toBeGreaterThan(0);
      for (const name of names) expect(exported.has(name), `${title}: ${name} is exported by no role`).toBe(true);
    }
  });
});

test("examples/grafana/prometheus.yml is a scrape config for the default up ports", async () => {
  const { parse } = await import("yaml");
  const config = parse(readFileSync(join(REPO_ROOT, "examples/grafana/prometheus.yml"), "utf8")) as { scrape_configs: { job_name: string; static_configs?: { targets: string[] }[] }[] };
  const jobs = Object.fromEntries(config.scrape_configs.map((j) => [j.job_name, j]));
  expect(Object.keys(jobs).sort()).toEqual(["kvcr-agent", "kvcr-frontend", "kvcr-mocker"]);
  expect(jobs["kvcr-agent"]!.static_configs![0]!.targets).toEqual(["127.0.0.1:9091"]);
  expect(jobs["kvcr-frontend"]!.static_configs![0]!.targets).toEqual(["127.0.0.1:8000"]);
});
