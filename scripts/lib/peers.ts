// Where the peers environment lives: one cached venv per set of pins (the hash of
// scripts/peers/*.txt), under $KVCR_PEERS_CACHE or ~/.cache/kvcr-mock. Shared by the script that
// builds it, the tests and the benches that run the peers, so all of them find the same Python.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";

export const PEERS_DIR = resolve(import.meta.dir, "../peers");
export const REQUIREMENTS = join(PEERS_DIR, "requirements.txt");
export const CONSTRAINTS = join(PEERS_DIR, "constraints.txt");
/** Installed without its dependencies (its exact aisimulate pin has no wheel on PyPI). */
export const AI_DYNAMO = "ai-dynamo==1.6.1";
export const DYNAMO_VERSION = "1.6.1";

/** The one line that tells a developer how to get the environment. */
export const PEERS_HINT = "build it with `bun scripts/peers-env.ts` (about two minutes, 1.8 GB) or point KVCR_PEERS_PYTHON at a Python that has the pinned peers";

export function peersCacheRoot(): string {
  return process.env.KVCR_PEERS_CACHE || join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "kvcr-mock");
}

/** A short hash of the pins and the install recipe: a change to either builds a new venv. */
export function peersKey(): string {
  const h = new Bun.CryptoHasher("sha256");
  for (const file of [REQUIREMENTS, CONSTRAINTS]) h.update(readFileSync(file));
  h.update(AI_DYNAMO);
  return h.digest("hex").slice(0, 12);
}

export function peersVenvDir(): string {
  return join(peersCacheRoot(), `peers-${peersKey()}`);
}

/** Written last by the builder: a venv without it is half-built and is rebuilt. */
export function peersStamp(venv = peersVenvDir()): string {
  return join(venv, "kvcr-peers.ok");
}

/**
 * The Python that has the peers: KVCR_PEERS_PYTHON when set (a user's own), else the cached venv
 * when it was built whole; undefined when there is none.
 */
export function findPeersPython(): string | undefined {
  const chosen = process.env.KVCR_PEERS_PYTHON;
  if (chosen) return chosen;
  const venv = peersVenvDir();
  const python = join(venv, "bin/python");
  return existsSync(peersStamp(venv)) && existsSync(python) ? python : undefined;
}

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
