// Late etcd events are ignored per key: a delete older than the put held (the record was put
// again since), a put older than the one held, anything at or below the last list's revision.
import { describe, expect, test } from "bun:test";
import { KeyRevisions } from "./etcd-key-revisions.ts";

describe("etcd events against the revision held per key", () => {
  test("in order, puts and deletes are fresh", () => {
    const k = new KeyRevisions();
    k.listed(10n, [["w1", 4n]]);
    expect(k.admit("put", "w1", 11n)).toEqual({ fresh: true });
    expect(k.admit("delete", "w1", 12n)).toEqual({ fresh: true });
    expect(k.admit("put", "w1", 13n)).toEqual({ fresh: true });
  });

  test("a delete that arrives after the record was put again is ignored (it is older than the put)", () => {
    const k = new KeyRevisions();
    k.listed(10n, []);
    expect(k.admit("put", "w1", 11n)).toEqual({ fresh: true }); // registered
    // The delete at 12 was missed; the re-registration at 15 was seen (listed from another member).
    k.listed(15n, [["w1", 15n]]);
    expect(k.admit("delete", "w1", 12n)).toEqual({ fresh: false, heldRevision: 15n });
    // Also without a list in between: a put at 15 seen first, then the late delete at 12.
    const j = new KeyRevisions();
    j.listed(10n, []);
    expect(j.admit("put", "w1", 15n)).toEqual({ fresh: true });
    expect(j.admit("delete", "w1", 12n)).toEqual({ fresh: false, heldRevision: 15n });
  });

  test("a put older than the one held, or than a delete held, is ignored", () => {
    const k = new KeyRevisions();
    k.listed(10n, [["w1", 9n]]);
    expect(k.admit("put", "w1", 20n)).toEqual({ fresh: true });
    expect(k.admit("put", "w1", 18n)).toEqual({ fresh: false, heldRevision: 20n });
    expect(k.admit("put", "w1", 20n)).toEqual({ fresh: false, heldRevision: 20n }); // the same one again
    expect(k.admit("delete", "w1", 21n)).toEqual({ fresh: true });
    expect(k.admit("put", "w1", 19n)).toEqual({ fresh: false, heldRevision: 21n });
  });

  test("anything at or below the last list's revision is already known, on any key", () => {
    const k = new KeyRevisions();
    k.listed(30n, [["w1", 25n]]);
    expect(k.admit("delete", "w2", 28n)).toEqual({ fresh: false, heldRevision: 30n });
    expect(k.admit("put", "w1", 27n)).toEqual({ fresh: false, heldRevision: 30n });
    expect(k.admit("put", "w2", 31n)).toEqual({ fresh: true });
  });

  test("several keys changed by one transaction share a revision: each is fresh", () => {
    const k = new KeyRevisions();
    k.listed(5n, [["a", 3n], ["b", 4n]]);
    expect(k.admit("delete", "a", 6n)).toEqual({ fresh: true });
    expect(k.admit("delete", "b", 6n)).toEqual({ fresh: true });
  });

  test("tombstones are bounded: the oldest folds into the floor, still refusing older events", () => {
    const k = new KeyRevisions(2);
    k.listed(1n, []);
    for (const [key, rev] of [["a", 2n], ["b", 3n], ["c", 4n]] as const) {
      expect(k.admit("put", key, rev)).toEqual({ fresh: true });
    }
    expect(k.admit("delete", "a", 10n)).toEqual({ fresh: true });
    expect(k.admit("delete", "b", 11n)).toEqual({ fresh: true });
    expect(k.admit("delete", "c", 12n)).toEqual({ fresh: true }); // evicts a's tombstone: floor 9
    expect(k.size).toBe(2);
    expect(k.admit("put", "a", 8n)).toEqual({ fresh: false, heldRevision: 9n });
    expect(k.admit("put", "a", 13n)).toEqual({ fresh: true });
  });
});
