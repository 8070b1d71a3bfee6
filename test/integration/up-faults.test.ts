// `up --faults FILE` on a real stack (agent, two mocker processes, frontend): a fault reaches the
// target worker's mocker at its time (its GET /admin/faults lists it), a `kill` crashes a mocker
// that the supervisor restarts, a `restart` stops and restarts the frontend; every entry is logged
// with its wall time. And `up --audit` logs the stack-wide worst precision / recall each interval.
import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CLI_ENTRY, pidAlive, runCli, spawnProcess, tempDir, waitFor, type ChildProcess } from "../harness.ts";

let dir: ReturnType<typeof tempDir> | undefined;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  dir?.[Symbol.dispose]();
  dir = undefined;
});

interface State {
  frontend_url: string;
  processes: { name: string; role: string; pid: number; url: string; ports: { zmqKvEvents?: number[] }; raw_endpoints?: string[][] }[];
}

async function up(args: string[]): Promise<{ child: ChildProcess; state: State; stateFile: string }> {
  dir = tempDir("kvcr-up-faults-");
  const stateFile = join(dir.path, "state.json");
  const child = spawnProcess([
    process.execPath, CLI_ENTRY, "up", "--discovery-dir", join(dir.path, "discovery"), "--agent-port", "0", "--http-port", "0",
    "--mocker-processes", "2", "--workers-per-process", "1", "--num-gpu-blocks-override", "256", "--state-file", stateFile, "--grace-period", "5", "--restart-backoff", "0.1", ...args,
  ]);
  cleanups.push(async () => void (await child[Symbol.asyncDispose]()));
  await child.readLine((l) => l.startsWith("kvcr-mock stack ready"), 60_000);
  const state = JSON.parse(readFileSync(stateFile, "utf8")) as State;
  cleanups.push(async () => {
    for (const p of state.processes) if (pidAlive(p.pid)) process.kill(-p.pid, "SIGKILL");
  });
  return { child, state, stateFile };
}

describe("up --faults", () => {
  test("a fault reaches its worker's mocker at its time; kill and restart go through the supervisor", async () => {
    const scratch = tempDir("kvcr-schedule-");
    cleanups.push(async () => scratch[Symbol.dispose]());
    const schedule = join(scratch.path, "faults.yaml");
    writeFileSync(
      schedule,
      ["- {at: 0.2s, target: worker 1, fault: {kind: latency, ttft_ms: 1, for: 600}}", "- {at: 1s, target: worker 0, fault: kill}", "- {at: 1.5s, target: frontend, fault: restart}"].join("\n"),
    );
    const { child, state, stateFile } = await up(["--faults", schedule]);
    const [m0, m1] = state.processes.filter((p) => p.role === "mocker");
    const frontend = state.processes.find((p) => p.role === "frontend")!;

    const applied = await child.readErrLine((l) => /fault schedule: entry 1 applied at \d{4}-\d\d-\d\dT[\d:.]+Z \(0\.\d+ s\): latency on worker 1/.test(l), 15_000);
    expect(applied).toContain(`at ${m1!.url}`);
    const listed = (await (await fetch(`${m1!.url}/admin/faults`)).json()) as { faults: { kind: string; id: string }[] };
    expect(listed.faults.map((f) => f.kind)).toEqual(["latency"]);
    expect(((await (await fetch(`${m0!.url}/admin/faults`)).json()) as { faults: unknown[] }).faults).toEqual([]);

    await child.readErrLine((l) => l.includes(`fault schedule: entry 2: kill mocker-0 (pid ${m0!.pid}, SIGKILL)`), 15_000);
    await child.readErrLine((l) => /mocker-0 restarted \(pid \d+\) and ready again/.test(l), 30_000);
    expect(pidAlive(m0!.pid)).toBe(false);
    // The restarted mocker picked new raw ports: the state file lists those it bound, not the old ones.
    await waitFor(() => (JSON.parse(readFileSync(stateFile, "utf8")) as State).processes.find((p) => p.name === "mocker-0")!.pid !== m0!.pid, { what: "the state file to name the new mocker-0" });
    const m0After = (JSON.parse(readFileSync(stateFile, "utf8")) as State).processes.find((p) => p.name === "mocker-0")!;
    expect(m0After.ports.zmqKvEvents).toEqual(m0After.raw_endpoints!.map((ranks) => Number(ranks[0]!.split(":").at(-1))));
    await child.readErrLine((l) => new RegExp(`fault schedule: entry 3: restart frontend \\(pid ${frontend.pid} → \\d+, ready again\\)`).test(l), 30_000);
    await waitFor(() => (JSON.parse(readFileSync(stateFile, "utf8")) as State).processes.find((p) => p.role === "frontend")!.pid !== frontend.pid, { what: "the state file to name the new frontend" });
    expect((await fetch(`${frontend.url}/v1/models`)).status).toBe(200);
  }, 90_000);

  test("up --audit logs the worst precision and recall once per interval, and each worker's worst as it stops", async () => {
    const { child } = await up(["--audit", "--audit-interval", "0.2"]);
    const lines = [];
    for (let i = 0; i < 3; i++) lines.push(await child.readErrLine((l) => l.includes("audit "), 10_000));
    for (const l of lines) expect(l).toMatch(/audit [\d.]+ s: worst precision 1\.0000, worst recall 1\.0000 over 2 worker\(s\)/);
    // Stopping, it sums up each worker's worst (as bench's result does).
    child.proc.kill("SIGTERM");
    const summary = await child.readErrLine((l) => l.includes("audit summary: worker "), 20_000);
    expect(summary).toMatch(/audit summary: worker kvcr-slot-\d: worst precision 1\.0000 \(at [\d.]+ s\), worst recall 1\.0000/);
  }, 60_000);

  test("a bad schedule stops up before anything starts, exit 2, naming the entry and field", async () => {
    const scratch = tempDir("kvcr-schedule-");
    cleanups.push(async () => scratch[Symbol.dispose]());
    const schedule = join(scratch.path, "bad.yaml");
    writeFileSync(schedule, "- {at: 1, target: agent, fault: {kind: clear_all}}\n- {at: later, target: worker 0, fault: kill}\n");
    const r = await runCli(["up", "--http-port", "0", "--agent-port", "0", "--faults", schedule]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain(`--faults ${schedule}: entry 1: fault: only mockers take faults; the agent takes kill or restart`);
    expect(r.stderr).toContain(`--faults ${schedule}: entry 2: at: got "later"`);
    expect(r.stderr).not.toContain("ready");
  });
});
