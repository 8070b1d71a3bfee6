// Where the peers environment (Dynamo, the routers, aiperf, pinned in one cached venv) lives: one
// venv per set of pins, under $KVCR_PEERS_CACHE or ~/.cache/kvcr-mock, named by a hash of the pin
// files. The binary knows the hash (PEERS_KEY), so it finds the venv the project's script built
// without reading the checkout; `up` starts a user's Dynamo roles with its Python.
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/** The hash of scripts/peers/requirements.txt and constraints.txt (a test keeps it equal to them). */
export const PEERS_KEY = "d84a28076e97";

export function peersCacheRoot(env: Readonly<Record<string, string | undefined>> = process.env): string {
  return env.KVCR_PEERS_CACHE || join(env.XDG_CACHE_HOME || join(homedir(), ".cache"), "kvcr-mock");
}

export function peersVenvDir(env: Readonly<Record<string, string | undefined>> = process.env, key = PEERS_KEY): string {
  return join(peersCacheRoot(env), `peers-${key}`);
}

/** Written last by the builder: a venv without it is half-built and is rebuilt. */
export function peersStamp(venv = peersVenvDir()): string {
  return join(venv, "kvcr-peers.ok");
}

/**
 * The Python that has the peers: KVCR_PEERS_PYTHON when set (a user's own), else the cached venv
 * when it was built whole; undefined when there is none.
 */
export function findPeersPython(env: Readonly<Record<string, string | undefined>> = process.env): string | undefined {
  const chosen = env.KVCR_PEERS_PYTHON;
  if (chosen) return chosen;
  const venv = peersVenvDir(env);
  const python = join(venv, "bin/python");
  return existsSync(peersStamp(venv)) && existsSync(python) ? python : undefined;
}
