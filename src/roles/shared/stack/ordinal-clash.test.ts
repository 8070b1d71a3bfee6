import { describe, expect, test } from "bun:test";
import type { DiscoveryEntry, DiscoveryStore } from "../../../discovery/store.ts";
import { KvcrError } from "../../../lib/errors.ts";
import { refuseOrdinalClashes, ordinalClashes, type OrdinalClaim } from "./ordinal-clash.ts";

const ownerId = (ordinal: number) => `${"ab".repeat(16)}:${"cd".repeat(16)}/${"0".repeat(16)}/${ordinal.toString(16).padStart(32, "0")}`;
const entry = (ordinal: number, pid = 1, instanceId = "other"): DiscoveryEntry => ({
  key: `ns/intents/${ordinal}`,
  value: { cache_owner_id: ownerId(ordinal), worker_id: `w${ordinal}`, dp_rank: 0 },
  owner: { pid, instanceId } as DiscoveryEntry["owner"],
  revision: 1,
  leaseExpiresAtMs: 0,
});
const claim = (extra: Partial<OrdinalClaim> = {}): OrdinalClaim => ({
  namespace: "ns",
  clash: (i) => (i.ordinal !== undefined && i.ordinal >= 2n ? `ordinal ${i.ordinal} of ${String(i.workerId)} (pid ${i.pid})` : undefined),
  ...extra,
});

describe("ordinal overlap refusal", () => {
  test("only intents the caller claims clash, never one without a CacheOwner id", () => {
    const malformed = { ...entry(5), value: { worker_id: "no-id" } };
    expect(ordinalClashes(claim(), [entry(1), entry(2), entry(3, 7, "self"), malformed])).toEqual(["ordinal 2 of w2 (pid 1)", "ordinal 3 of w3 (pid 7)"]);
  });

  test("the caller's own records do not clash", () => {
    expect(ordinalClashes(claim({ selfInstanceId: "self" }), [entry(2), entry(3, 7, "self")])).toEqual(["ordinal 2 of w2 (pid 1)"]);
  });

  test("records of dead writers do not clash", () => {
    expect(ordinalClashes(claim({ ownerAlive: (owner) => owner.pid !== 1 }), [entry(2), entry(3, 7)])).toEqual(["ordinal 3 of w3 (pid 7)"]);
  });

  test("the refusal shows three clashes and counts the rest", async () => {
    const store = { list: async () => [2, 3, 4, 5, 6].map((s) => entry(s)) } as unknown as DiscoveryStore;
    const refused = await refuseOrdinalClashes(store, claim(), (c) => `overlap: ${c}.`).then(() => undefined, (e: unknown) => e);
    expect(refused).toBeInstanceOf(KvcrError);
    expect((refused as KvcrError).code).toBe("CACHE_SLOT_OVERLAP");
    expect((refused as Error).message).toBe("overlap: ordinal 2 of w2 (pid 1); ordinal 3 of w3 (pid 1); ordinal 4 of w4 (pid 1) (and 2 more).");
    await refuseOrdinalClashes({ list: async () => [entry(1)] } as unknown as DiscoveryStore, claim(), () => "never");
  });
});
