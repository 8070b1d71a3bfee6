// Regenerates test/fixtures/dynamo-1.6.1 from the installed peers: Dynamo's own frontend and mocker
// run and recorded (scripts/peers/capture-dynamo.py). Run after a change of the Dynamo pin, then
// review the diff: docs/DECISIONS.md lists where the records differ from what the source suggested.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { captureArgv, DYNAMO_VERSION, findPeersPython, PEERS_HINT, writeModelFiles } from "./lib/peers.ts";

const python = findPeersPython();
if (!python) {
  console.error(`no peers environment: ${PEERS_HINT}`);
  process.exit(1);
}
const out = resolve(import.meta.dir, `../test/fixtures/dynamo-${DYNAMO_VERSION}`);
const scratch = mkdtempSync(join(tmpdir(), "kvcr-capture-"));
try {
  rmSync(out, { recursive: true, force: true });
  const modelDir = join(scratch, "mock-model");
  await writeModelFiles(modelDir);
  // TMPDIR: Dynamo's Python roles leave a logging config in the temp dir at every start.
  const code = await Bun.spawn(captureArgv(python, out, modelDir), { stdout: "inherit", stderr: "inherit", env: { ...process.env, TMPDIR: scratch } }).exited;
  if (code !== 0) process.exitCode = code;
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
