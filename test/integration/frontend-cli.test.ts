// `kvcr-mock frontend` at the process edge: bad flags exit 2 naming them, Dynamo's environment
// names are read, and a started frontend serves, answers 503 with no workers, and exits 0 on SIGTERM.
import { describe, expect, test } from "bun:test";
import { CLI_ENTRY, makeTempDir, runCli, spawnChild, withTimeout } from "../harness.ts";
import { LineQueue } from "../lines.ts";

describe("kvcr-mock frontend (CLI)", () => {
  test("bad flags and environment values exit 2, one line each, nothing started", async () => {
    const r = await runCli(["frontend", "--router-mode", "best", "--router-host-cache-hit-weight", "2"], { env: { DYN_HTTP_PORT: "99999" } });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain("--router-mode");
    expect(r.stderr).toContain("best");
    expect(r.stderr).toContain("--router-host-cache-hit-weight");
    expect(r.stderr).toContain("DYN_HTTP_PORT");
  });

  test("serves on the port it picked, 503 without workers, exit 0 on SIGTERM", async () => {
    await using dir = await makeTempDir("kvcr-fe-cli-");
    await using child = spawnChild([process.execPath, CLI_ENTRY, "frontend", "--namespace", "cli", "--discovery-dir", dir.path, "--log-format", "json"], {
      stdout: "ignore",
      env: { DYN_HTTP_PORT: "0", DYN_ROUTER_MODE: "kv" },
    });
    const { proc } = child;
    const lines = new LineQueue(proc.stderr);
    const line = await lines.next((l) => l.includes("OpenAI-compatible API on"), 15_000, () => "the frontend's listening line");
    expect(line).toContain("router kv");
    const url = /(http:\/\/127\.0\.0\.1:\d+)/.exec(line)![1]!;
    const health = await fetch(`${url}/health`);
    expect(health.status).toBe(503);
    expect(await health.json()).toMatchObject({ instances: 0 });
    const res = await fetch(`${url}/v1/chat/completions`, { method: "POST", body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }) });
    expect(res.status).toBe(503);
    proc.kill("SIGTERM");
    expect(await withTimeout(proc.exited, 10_000, "frontend exit")).toBe(0);
  }, 30_000);
});
