// The binary finds the peers environment by PEERS_KEY (src/lib/peers-location.ts); the script that
// builds it names the venv by the hash of the pin files. They must agree, or `up --runtime dynamo`
// would look for a venv nobody built: a change to scripts/peers/*.txt updates PEERS_KEY with it.
import { expect, test } from "bun:test";
import { PEERS_KEY, peersKey } from "./peers.ts";

test("PEERS_KEY is the hash of today's pin files", () => {
  expect(peersKey(), "update PEERS_KEY in src/lib/peers-location.ts to this hash").toBe(PEERS_KEY);
});
