// The example configs a user copies must load cleanly with the commands they are written for.
import { expect, test } from "bun:test";
import { join } from "node:path";
import { REPO_ROOT, runCli } from "./harness.ts";

test("examples/mocker-state-agent.yaml and extra-engine-args.json are valid mocker configs", async () => {
  // --help does not validate, so ask for a config problem the example cannot have: a bad extra flag.
  for (const args of [["--config", "examples/mocker-state-agent.yaml"], ["--extra-engine-args", "examples/extra-engine-args.json"]]) {
    const r = await runCli(["mocker", ...args, "--block-size", "0"], { cwd: REPO_ROOT });
    expect(r.exitCode).toBe(2);
    // Only the injected problem is reported: the example itself is valid.
    const lines = r.stderr.trim().split("\n").slice(1);
    expect(lines).toEqual(["  --block-size: got 0, expected an integer from 1 to 65536"]);
  }
});

test("examples/replay-mooncake.yaml replays the first requests of the trace", async () => {
  const r = await runCli(["replay", "--config", join("examples", "replay-mooncake.yaml"), "--requests", "50", "--output-json", "-", "--log-level", "error"], { cwd: REPO_ROOT });
  expect(r.stderr).toBe("");
  expect(r.exitCode).toBe(0);
  expect(JSON.parse(r.stdout)).toMatchObject({ completed: 50, failed: 0 });
});
