// The compiled binary carries everything it runs: no path of the checkout it was built in is
// compiled into it, and run from inside that checkout (where node_modules sits next to it) it opens
// nothing under the checkout — traced with strace (Debian's, installed by .ci/run; required under
// CI=true). Also: --version names the build's commit, and a built-in trace replays.
import { beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { REPO_ROOT, runCli, tempDir } from "../harness.ts";
import { compiledBinary } from "./compiled.ts";

const STRACE = ["/usr/bin/strace", "/bin/strace"].find((p) => existsSync(p));
if (!STRACE && process.env.CI === "true") throw new Error("strace not found (CI=true requires it): apt-get install -y strace");

let bin: string;
beforeAll(async () => {
  bin = await compiledBinary();
}, 120_000);

describe("compiled binary, hermetic", () => {
  test("no path of the build checkout is compiled in", () => {
    const bytes = readFileSync(bin);
    expect(bytes.includes(Buffer.from(REPO_ROOT))).toBe(false);
    expect(bytes.includes(Buffer.from("node_modules/msgpackr-extract"))).toBe(false);
  });

  test("--version names the build: package version + commit", async () => {
    const r = await runCli(["--version"], { bin });
    expect(r.stdout.trim()).toMatch(new RegExp(`^${pkg.version.replaceAll(".", "\\.")}\\+([0-9a-f]{7}(\\.dirty)?|unknown)$`));
  });

  // replay (a built-in trace) and a role's start-up, which loads the msgpack codecs: where the old
  // binary went looking for msgpackr's native extension in the checkout's node_modules.
  test.if(STRACE !== undefined).each([
    [["replay", "--trace", "builtin:mooncake-synthetic", "--requests", "20", "--log-level", "warn"], "Simulated requests per wall second"],
    [["agent", "--help"], "kvcr-mock agent"],
  ])("run from inside the checkout, %p opens no file of it (node_modules included)", async (args, expected) => {
    using dir = tempDir("kvcr-strace-");
    const log = join(dir.path, "trace.log");
    const r = await runCli(["-f", "-qq", "-e", "trace=open,openat,openat2,stat,statx,newfstatat,access,readlink", "-o", log, bin, ...args], {
      bin: STRACE,
      cwd: REPO_ROOT,
      timeoutMs: 60_000,
    });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain(expected);
    const touched = readFileSync(log, "utf8")
      .split("\n")
      .flatMap((line) => [...line.matchAll(/"([^"]*)"/g)].map((m) => m[1]!))
      .filter((p) => p.includes("node_modules") || (p.startsWith(REPO_ROOT) && p !== REPO_ROOT));
    expect(touched).toEqual([]);
  });
});
