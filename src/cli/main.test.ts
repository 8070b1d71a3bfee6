// The process edge in-process: citty resolves the command word, the project answers unknown
// words (prototype names included) with exit 2 and a suggestion only when one is close.
import { describe, expect, test } from "bun:test";
import { runCommand } from "citty";
import { defineOptions } from "../config/options.ts";
import { defineRoleCommand, ExitStatus } from "./define-command.ts";
import { main } from "./main.ts";

/** main(argv) with stdout and stderr captured. */
async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = { stdout: "", stderr: "" };
  const saved = { stdout: process.stdout.write, stderr: process.stderr.write };
  process.stdout.write = ((chunk: string | Uint8Array) => ((out.stdout += String(chunk)), true)) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string | Uint8Array) => ((out.stderr += String(chunk)), true)) as typeof process.stderr.write;
  try {
    const code = await main(argv);
    return { code, ...out };
  } finally {
    process.stdout.write = saved.stdout;
    process.stderr.write = saved.stderr;
  }
}

describe("main", () => {
  test.each(["toString", "constructor", "__proto__", "hasOwnProperty", "valueOf"])("%s is an unknown command, not an object property", async (word) => {
    const r = await run([word]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`kvcr-mock: unknown command "${word}". Commands: agent, bench, calibrate, events, frontend, mocker, model-files, replay, up.\n`);
    expect(r.stdout).toBe("");
  });

  test("a misspelt command gets the close one suggested; an unrelated word gets none", async () => {
    expect((await run(["bnech", "--requests", "3"])).stderr).toBe('kvcr-mock: unknown command "bnech"; did you mean "bench"? Commands: agent, bench, calibrate, events, frontend, mocker, model-files, replay, up.\n');
    expect((await run(["mokcer"])).stderr).toContain('did you mean "mocker"?');
    const unrelated = await run(["serve"]);
    expect(unrelated.code).toBe(2);
    expect(unrelated.stderr).not.toContain("did you mean");
  });

  test("citty resolves the command for --help and --version, before any --", async () => {
    const help = await run(["events", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("USAGE kvcr-mock events [OPTIONS]");
    expect(help.stdout).toContain("--endpoint");
    expect((await run(["replay", "--version"])).stdout).toMatch(/^\d+\.\d+\.\d+\+/);
    // After --, --help belongs to the command `up` runs: up's own flags are checked instead.
    const after = await run(["up", "--no-such-flag", "--", "x", "--help"]);
    expect(after.code).toBe(2);
    expect(after.stderr).toContain("--no-such-flag: unknown flag");
  });

  test("the root: --help lists the commands, nothing given exits 2, -v is refused", async () => {
    expect((await run(["--help"])).stdout).toContain("COMMANDS");
    const none = await run([]);
    expect(none.code).toBe(2);
    expect(none.stderr).toEndWith("kvcr-mock: no command given.\n");
    expect((await run(["replay", "-v"])).code).toBe(2);
  });

  test("a command's config problems exit 2, one line each", async () => {
    const r = await run(["replay", "--requests", "0", "--num-workers", "x"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe("kvcr-mock: invalid configuration:\n  --requests: got 0, expected an integer ≥ 1\n  --num-workers: got \"x\", expected an integer from 1 to 100000\n");
  });
});

describe("a command run by citty", () => {
  const options = defineOptions({ code: { kind: "int", default: 0, description: "Exit code to return" } });
  const cmd = defineRoleCommand({ name: "demo", description: "demo", options, run: async (config) => config.code });

  test("a non-zero exit code leaves citty's runCommand as an ExitStatus; zero as a normal return", async () => {
    const err = await runCommand(cmd, { rawArgs: ["--code", "3", "--log-level", "silent"] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ExitStatus);
    expect((err as ExitStatus).code).toBe(3);
    expect(await runCommand(cmd, { rawArgs: ["--log-level", "silent"] })).toEqual({ result: undefined });
  });
});
