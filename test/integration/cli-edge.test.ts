// What a new user sees at the process edge: help that fits and is plain in a pipe, no silent -v,
// and errors that name the real problem once (exit 1 for runtime failures).
import { describe, expect, test } from "bun:test";
import { holdPort } from "../../src/transport/port-hold.ts";
import { runCli } from "../harness.ts";

describe("CLI edge", () => {
  test("--help in a pipe fits COLUMNS and has no ANSI colour, also without NO_COLOR", async () => {
    const r = await runCli(["mocker", "--help"], { env: { COLUMNS: "80", NO_COLOR: "" } });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).not.toContain("\x1b[");
    const long = r.stdout.split("\n").filter((l) => l.length > 80 && /\S\s+\S/.test(l.trim()));
    expect(long).toEqual([]);
    expect(r.stdout).toContain("KVCR_NUM_WORKERS");
  });

  test("-v is refused anywhere on the line, --version prints the version", async () => {
    for (const args of [["-v"], ["mocker", "-v"], ["replay", "--requests", "1", "-v"]]) {
      const r = await runCli(args);
      expect([r.exitCode, r.stdout]).toEqual([2, ""]);
      expect(r.stderr).toContain("-v is not an option: --version prints the version");
    }
    expect((await runCli(["mocker", "--version"])).exitCode).toBe(0);
  });

  test("an option from its KVCR_ environment variable reaches the command", async () => {
    const r = await runCli(["replay", "--output-json", "-", "--log-level", "silent"], { env: { KVCR_REQUESTS: "7", KVCR_NUM_WORKERS: "1" } });
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout).completed).toBe(7);
  });

  test("HTTP port in use: one line naming the port, exit 1", async () => {
    const held = holdPort("127.0.0.1");
    try {
      const r = await runCli(["mocker", "--http-port", String(held.port), "--log-level", "warn"]);
      expect(r.exitCode).toBe(1);
      expect(r.stderr).toContain(`cannot serve HTTP on 127.0.0.1:${held.port}: port ${held.port} is in use`);
      expect(r.stderr.match(/in use/g)?.length).toBe(1);
    } finally {
      held.close();
    }
  });

  test("a bind address that is not this machine's is named as such, not as a port problem", async () => {
    const r = await runCli(["mocker", "--host", "192.0.2.1", "--log-level", "warn"]);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain("192.0.2.1 is not an address of this machine");
    expect(r.stderr).not.toContain("port");
  });

  test("events on a host name that does not resolve exits 1 naming the host (.invalid never resolves, RFC 6761)", async () => {
    const r = await runCli(["events", "--endpoint", "tcp://no-such-host.invalid:5557"], { timeoutMs: 15_000 });
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain('host "no-such-host.invalid" does not resolve');
  }, 30_000);
});
