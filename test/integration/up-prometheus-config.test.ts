// `up --prometheus-config FILE`: once the stack is ready, FILE is a Prometheus scrape config naming
// the agent, every mocker process and the frontend at the ports they actually got (all picked
// here), and each target serves its role's families on /metrics.
import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { CLI_ENTRY, pidAlive, spawnProcess, tempDir, type ChildProcess } from "../harness.ts";
import { parsePrometheusText } from "../prometheus-text.ts";

let dir: ReturnType<typeof tempDir> | undefined;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  dir?.[Symbol.dispose]();
});

interface ScrapeConfig {
  scrape_configs: { job_name: string; metrics_path: string; static_configs: { targets: string[]; labels: { process: string } }[] }[];
}

describe("up --prometheus-config", () => {
  test("writes the running stack's scrape targets at their real ports", async () => {
    dir = tempDir("kvcr-prom-");
    const file = join(dir.path, "prometheus.yml");
    const stateFile = join(dir.path, "state.json");
    const child: ChildProcess = spawnProcess([
      process.execPath, CLI_ENTRY, "up", "--discovery-dir", join(dir.path, "discovery"), "--agent-port", "0", "--http-port", "0",
      "--mocker-processes", "2", "--num-workers", "2", "--num-gpu-blocks-override", "256", "--num-host-blocks", "64",
      "--state-file", stateFile, "--prometheus-config", file, "--grace-period", "5",
    ]);
    cleanups.push(async () => void (await child[Symbol.asyncDispose]()));
    await child.readLine((l) => l.startsWith("kvcr-mock stack ready"), 60_000);
    // It says where the file went (the path made absolute), and the stack has 2 mockers of 1 worker.
    expect(await child.readErrLine((l) => l.includes("Prometheus scrape config"))).toContain(`(4 /metrics targets) written to ${file}`);
    const state = JSON.parse(readFileSync(stateFile, "utf8")) as { processes: { name: string; role: string; pid: number; url: string }[] };
    cleanups.push(async () => {
      for (const p of state.processes) if (pidAlive(p.pid)) process.kill(-p.pid, "SIGKILL");
    });

    const config = parse(readFileSync(file, "utf8")) as ScrapeConfig;
    const jobs = Object.fromEntries(config.scrape_configs.map((j) => [j.job_name, j]));
    expect(Object.keys(jobs).sort()).toEqual(["kvcr-agent", "kvcr-frontend", "kvcr-mocker"]);
    const targets = config.scrape_configs.flatMap((j) => j.static_configs.map((s) => ({ job: j.job_name, process: s.labels.process, target: s.targets[0]! })));
    expect(targets.map((t) => t.process).sort()).toEqual(state.processes.map((p) => p.name).sort());
    for (const p of state.processes) expect(targets.find((t) => t.process === p.name)!.target).toBe(new URL(p.url).host);
    for (const t of targets) expect(Number(t.target.split(":")[1])).toBeGreaterThan(0);

    // Each target answers its role's families.
    const expectFamily: Record<string, string> = { "kvcr-agent": "kvcr_agent_slots", "kvcr-mocker": "vllm:num_requests_running", "kvcr-frontend": "dynamo_frontend_requests_total" };
    for (const t of targets) {
      const text = await (await fetch(`http://${t.target}${jobs[t.job]!.metrics_path}`)).text();
      expect(parsePrometheusText(text).has(expectFamily[t.job]!), `${t.process} serves ${expectFamily[t.job]}`).toBe(true);
    }
  }, 90_000);
});
