import { describe, expect, test } from "bun:test";
import type { DiscoveryEntry, DiscoveryStore } from "../discovery/store.ts";
import { KvcrError } from "../lib/errors.ts";
import { refuseSlotClashes, slotClashes, type SlotClaim } from "./slot-overlap-refusal.ts";

const ownerId = (slot: number) => `${"ab".repeat(16)}:${"cd".repeat(16)}/${"0".repeat(16)}/${slot.toString(16).padStart(32, "0")}`;
const entry = (slot: number, pid = 1, instanceId = "other"): DiscoveryEntry => ({
  key: `ns/intents/${slot}`,
  value: { cache_owner_id: ownerId(slot), worker_id: `w${slot}`, dp_rank: 0 },
  owner: { pid, instanceId } as DiscoveryEntry["owner"],
  revision: 1,
  leaseExpiresAtMs: 0,
});
const claim = (extra: Partial<SlotClaim> = {}): SlotClaim => ({
  namespace: "ns",
  clash: (i) => (i.slot !== undefined && i.slot >= 2n ? `slot ${i.slot} of ${String(i.workerId)} (pid ${i.pid})` : undefined),
  ...extra,
});

describe("slot overlap refusal", () => {
  test("only intents the caller claims clash, never one without a CacheOwner id", () => {
    const malformed = { ...entry(5), value: { worker_id: "no-id" } };
    expect(slotClashes(claim(), [entry(1), entry(2), entry(3, 7, "self"), malformed])).toEqual(["slot 2 of w2 (pid 1)", "slot 3 of w3 (pid 7)"]);
  });

  test("the caller's own records do not clash", () => {
    expect(slotClashes(claim({ selfInstanceId: "self" }), [entry(2), entry(3, 7, "self")])).toEqual(["slot 2 of w2 (pid 1)"]);
  });

  test("records of dead writers do not clash", () => {
    expect(slotClashes(claim({ ownerAlive: (owner) => owner.pid !== 1 }), [entry(2), entry(3, 7)])).toEqual(["slot 3 of w3 (pid 7)"]);
  });

  test("the refusal shows three clashes and counts the rest", async () => {
    const store = { list: async () => [2, 3, 4, 5, 6].map((s) => entry(s)) } as unknown as DiscoveryStore;
    const refused = await refuseSlotClashes(store, claim(), (c) => `overlap: ${c}.`).then(() => undefined, (e: unknown) => e);
    expect(refused).toBeInstanceOf(KvcrError);
    expect((refused as KvcrError).code).toBe("CACHE_SLOT_OVERLAP");
    expect((refused as Error).message).toBe("overlap: slot 2 of w2 (pid 1); slot 3 of w3 (pid 1); slot 4 of w4 (pid 1) (and 2 more).");
    await refuseSlotClashes({ list: async () => [entry(1)] } as unknown as DiscoveryStore, claim(), () => "never");
  });
});
