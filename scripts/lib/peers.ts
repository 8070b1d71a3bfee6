// The peers environment for the scripts, tests and benches: where it lives (src/lib/peers-location.ts,
// shared with the binary), the pin files, and the helpers they use with it.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

export const PEERS_DIR = resolve(import.meta.dir, "../peers");
export const REQUIREMENTS = join(PEERS_DIR, "requirements.txt");
export const CONSTRAINTS = join(PEERS_DIR, "constraints.txt");
export { findPeersPython, peersCacheRoot, peersStamp } from "../../src/lib/peers-location.ts";
import { PEERS_KEY, peersVenvDir as venvDirFor } from "../../src/lib/peers-location.ts";

/** Installed without its dependencies (its exact aisimulate pin has no wheel on PyPI). */
export const AI_DYNAMO = "ai-dynamo==1.6.1";

/** A short hash of the pins and the install recipe: a change to either builds a new venv (and must be PEERS_KEY, which the binary knows). */
export function peersKey(): string {
  const h = new Bun.CryptoHasher("sha256");
  for (const file of [REQUIREMENTS, CONSTRAINTS]) h.update(readFileSync(file));
  h.update(AI_DYNAMO);
  return h.digest("hex").slice(0, 12);
}

export function peersVenvDir(): string {
  return venvDirFor(process.env, peersKey());
}

export { PEERS_KEY };
export const DYNAMO_VERSION = "1.6.1";

/** The one line that tells a developer how to get the environment. */
export const PEERS_HINT = "build it with `bun scripts/peers-env.ts` (about two minutes, 1.8 GB) or point KVCR_PEERS_PYTHON at a Python that has the pinned peers";

export const CAPTURE_SCRIPT = join(PEERS_DIR, "capture-dynamo.py");

/** Writes the offline model directory (what `kvcr-mock model-files` writes) into `dir`. */
export async function writeModelFiles(dir: string): Promise<void> {
  const { hfModelFiles } = await import("../../src/core/text/hf-model-files.ts");
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(hfModelFiles({ maxModelLen: 32_768 }))) writeFileSync(join(dir, name), text);
}

/** The capture's command line (Dynamo's frontend and mocker, recorded into `out`; the script's header says how). */
export function captureArgv(python: string, out: string, modelDir: string): string[] {
  return [python, CAPTURE_SCRIPT, out, "--model-dir", modelDir];
}
