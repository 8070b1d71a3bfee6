// Regenerates the built-in timing profiles (src/config/timing-profiles/) from AIConfigurator's
// measured kernel database in the peers environment (scripts/peers/aic_timing_profiles.py). Run
// after a change of the aiconfigurator pin and review the diff; the binary carries the JSON only.
import { resolve } from "node:path";
import { findPeersPython, PEERS_HINT } from "./lib/peers.ts";

const python = findPeersPython();
if (!python) {
  console.error(`no peers environment: ${PEERS_HINT}`);
  process.exit(1);
}
const out = resolve(import.meta.dir, "../src/config/timing-profiles");
const code = await Bun.spawn([python, resolve(import.meta.dir, "peers/aic_timing_profiles.py"), out], { stdout: "inherit", stderr: "inherit" }).exited;
process.exitCode = code;
