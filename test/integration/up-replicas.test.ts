// `up --frontends 2 --router-replica-sync` as a user runs it (bun src/cli.ts): up starts a nats-server
// of its own and two synced frontends; `-- CMD` gets every frontend's URL (KVCR_FRONTEND_URLS, the
// state file too) and sees a request routed by one counted by the other. Without nats-server, up
// says how to get it and exits 2.
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli, tempDir } from "../harness.ts";
import { natsAvailable } from "../nats.ts";

// Run by `-- bun probe.ts`: a long request on the first frontend, then the second's /health until it counts it.
const PROBE = `
const urls = process.env.KVCR_FRONTEND_URLS.split(",");
const state = JSON.parse(await Bun.file(process.env.KVCR_STATE_FILE).text());
console.log("URLS=" + urls.join(",") + " FIRST=" + process.env.KVCR_FRONTEND_URL + " STATE=" + state.frontend_urls.join(",") + " ROLES=" + state.processes.map((p) => p.name).join(","));
const ctrl = new AbortController();
const res = await fetch(urls[0] + "/v1/completions", { method: "POST", signal: ctrl.signal, body: JSON.stringify({ model: "mock-model", prompt: "a b c d e f g h i j k l m n o p q r s t u v w x y z", max_tokens: 4000, stream: true, ignore_eos: true }) });
await res.body.getReader().read();
const deadline = Date.now() + 10000;
let seen = 0;
while (Date.now() < deadline && seen === 0) {
  seen = (await (await fetch(urls[1] + "/health")).json()).replica_sync.remote_requests;
  await Bun.sleep(20);
}
console.log("REMOTE=" + seen);
ctrl.abort();
`;

describe("up --frontends with router replica sync", () => {
  test.skipIf(!natsAvailable())("starts nats-server and two synced frontends; CMD gets every URL", async () => {
    using dir = tempDir("kvcr-up-replicas-");
    const probe = join(dir.path, "probe.ts");
    writeFileSync(probe, PROBE);
    const args = ["up", "--frontends", "2", "--router-replica-sync", "--http-port", "0", "--agent-port", "0", "--discovery-dir", join(dir.path, "d"), "--speedup-ratio", "1", "--", process.execPath, probe];
    const r = await runCli(args, { timeoutMs: 60_000 });
    expect(r.exitCode, r.stderr).toBe(0);
    const m = /^URLS=(\S+),(\S+) FIRST=(\S+) STATE=(\S+) ROLES=(\S+)$/m.exec(r.stdout)!;
    expect(m, r.stdout).not.toBeNull();
    expect(m[3]).toBe(m[1]!);
    expect(m[4]).toBe(`${m[1]},${m[2]}`);
    expect(m[5]!.split(",").sort()).toEqual(["agent", "frontend", "frontend-1", "mocker-0", "nats"]);
    expect(r.stdout).toContain("REMOTE=1");
    expect(r.stderr).toMatch(/nats +nats:\/\/127\.0\.0\.1:\d+/);
  }, 90_000);

  test("without nats-server: says how to get it, exit 2, nothing started", async () => {
    const r = await runCli(["up", "--frontends", "2", "--router-replica-sync", "--http-port", "0", "--agent-port", "0", "--nats-server", "/nonexistent/nats-server"], { timeoutMs: 30_000 });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain("nats-server is not installed");
    expect(r.stderr).toContain("apt-get install nats-server");
    expect(r.stderr).not.toContain("mocker-0 |");
  }, 30_000);
});
