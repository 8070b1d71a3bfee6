import { expect, test } from "bun:test";
import { join } from "node:path";
import { REPO_ROOT, spawnBun } from "../../test/harness.ts";

test("untilSignal resolves on the first signal and keeps later ones from killing the process", async () => {
  await using child = spawnBun(join(REPO_ROOT, "test/fixtures/signal-child.ts"));
  await child.readLine((l) => l === "ready");
  child.proc.kill("SIGTERM");
  await child.readLine((l) => l === "first SIGTERM");
  child.proc.kill("SIGINT");
  await child.readLine((l) => l === "repeat SIGINT");
  child.proc.kill("SIGTERM");
  await child.readLine((l) => l === "repeat SIGTERM");
  expect(child.proc.exitCode).toBeNull(); // still alive after three signals
});
