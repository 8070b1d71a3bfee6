// The peers environment for tests (Dynamo, the routers, aiperf; scripts/lib/peers.ts finds it).
// Without it a developer run skips the peer tests with one line saying how to build it; under
// CI=true a missing environment fails them, unless .ci/run found the package registry unreachable
// (KVCR_PEERS_UNREACHABLE=1), which skips them with one loud line instead.
import { findPeersPython, PEERS_HINT } from "../scripts/lib/peers.ts";

export const PEERS_PYTHON = findPeersPython();

let warned = false;
/** True when the peers can run here (see the header for when it throws or skips). */
export function peersAvailable(): boolean {
  if (PEERS_PYTHON) return true;
  if (process.env.KVCR_PEERS_UNREACHABLE === "1") {
    if (!warned) console.warn("SKIPPING PEER TESTS: the package registry could not be reached, so the peers environment was not built");
  } else if (process.env.CI === "true") {
    throw new Error(`the peers environment is missing (CI=true requires it): ${PEERS_HINT}`);
  } else if (!warned) {
    console.warn(`skipping peer tests: no peers environment; ${PEERS_HINT}`);
  }
  warned = true;
  return false;
}

/** The environment a peer process gets: offline (no Hugging Face hub), quiet, no colour. */
export function peerEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { HF_HUB_OFFLINE: "1", TRANSFORMERS_OFFLINE: "1", DYN_LOG: "warn", NO_COLOR: "1", ...extra };
}
