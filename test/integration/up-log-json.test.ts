// `kvcr-mock up --log-format json` from source: every line up writes, on stdout and stderr, is
// one JSON object with a `role` — up's own lines "up", each child's its name with the child's own
// fields kept, a child's plain-text line (a --frontend-cmd fake here) wrapped. Each role's
// /version answers along the way.
import { afterEach, expect, test } from "bun:test";
import { join } from "node:path";
import { VERSION } from "../../src/lib/version.ts";
import { CLI_ENTRY, FIXTURES_DIR, pidAlive, spawnProcess, tempDir, withTimeout } from "../harness.ts";

const FAKE = `${process.execPath} ${join(FIXTURES_DIR, "fake-role.ts")}`;

let dir: ReturnType<typeof tempDir> | undefined;
afterEach(() => dir?.[Symbol.dispose]());

test("every stdout and stderr line is a JSON object with a role", async () => {
  dir = tempDir("kvcr-up-json-");
  const stateFile = join(dir.path, "state.json");
  await using child = spawnProcess([
    process.execPath, CLI_ENTRY, "up",
    "--discovery-dir", join(dir.path, "discovery"),
    "--agent-port", "0",
    "--http-port", "0",
    "--workers-per-process", "1",
    "--num-gpu-blocks-override", "64",
    "--frontend-cmd", `${FAKE} --port {port} --workers {workers} --model {model}`,
    "--state-file", stateFile,
    "--grace-period", "5",
    "--log-format", "json",
  ]);
  const ready = JSON.parse(await child.readLine((l) => l.includes("stack ready"), 30_000)) as { role: string; processes: { name: string; role: string; url: string; pid: number }[] };
  expect(ready.role).toBe("up");
  expect(ready.processes.map((p) => p.name)).toEqual(["agent", "mocker-0", "frontend"]);
  try {
    for (const p of ready.processes.filter((p) => p.role !== "frontend")) expect(await (await fetch(`${p.url}/version`)).json()).toEqual({ version: VERSION });
    // The fake frontend's plain "serving" line has come through (it is written before it is ready).
    await child.readErrLine((l) => l.includes("fake role serving on"));
    child.proc.kill("SIGINT");
    // up's last line: every child has stopped and its output has been passed on before it.
    await child.readErrLine((l) => l.includes('"stack stopped"'), 15_000);
    expect(await withTimeout(child.proc.exited, 15_000, "up's exit")).toBe(0);
  } finally {
    for (const p of ready.processes) if (pidAlive(p.pid)) process.kill(-p.pid, "SIGKILL");
  }
  const lines = (text: string) => text.split("\n").slice(0, -1); // each line ends in "\n"
  const all = [...lines(child.stdoutText()), ...lines(child.stderrText())];
  expect(all.length).toBeGreaterThan(5);
  const parsed = all.map((l) => {
    let o: unknown;
    try {
      o = JSON.parse(l);
    } catch {
      throw new Error(`not a JSON line: ${l}`);
    }
    expect(typeof o === "object" && o !== null && !Array.isArray(o)).toBe(true);
    expect(typeof (o as { role?: unknown }).role).toBe("string");
    return o as { role: string; level?: string; msg?: string; tag?: string; ts?: string };
  });
  const roles = new Set(parsed.map((o) => o.role));
  for (const r of ["up", "agent", "mocker-0", "frontend"]) expect(roles).toContain(r);
  // A child's own JSON fields are kept (the mocker logs with its tag and a timestamp).
  const mocker = parsed.find((o) => o.role === "mocker-0")!;
  expect(mocker).toMatchObject({ tag: "mocker", level: expect.any(String), ts: expect.any(String), msg: expect.any(String) });
  // The fake frontend's plain line, wrapped.
  expect(parsed.find((o) => o.role === "frontend" && o.msg?.startsWith("fake role serving on"))).toMatchObject({ level: "info" });
  expect(parsed.some((o) => o.role === "up" && o.msg === "stack stopped")).toBe(true);
}, 60_000);
