import { describe, expect, test } from "bun:test";
import { ReplayThenLive } from "./replay-then-live.ts";

describe("ReplayThenLive", () => {
  test("without a replay every live batch is the caller's", () => {
    const o = new ReplayThenLive<number, string>(10);
    expect([o.live(0, "a"), o.live(5, "b"), o.live(1, "c")]).toEqual(["next", "next", "next"]);
  });

  test("live batches are held during a replay and come back without the ones it covered", () => {
    const o = new ReplayThenLive<bigint, string>(10);
    o.begin();
    expect(o.live(4n, "l4")).toBe("held");
    expect(o.live(5n, "l5")).toBe("held");
    for (const s of [2n, 3n, 4n]) o.replayed(s);
    expect(o.end()).toEqual({ next: [{ seq: 5n, item: "l5" }], duplicates: 1, refused: 0 });
    expect(o.isReplaying).toBe(false);
    expect(o.live(6n, "l6")).toBe("next");
  });

  test("after the end, live seqs the replay covered are duplicates until one at or below the previous live seq ends the overlap (restart)", () => {
    const o = new ReplayThenLive<number, string>(10);
    o.begin({ seq: 2, item: "first" });
    for (const s of [1, 2, 3]) o.replayed(s);
    expect(o.end().next).toEqual([]);
    expect(o.live(3, "dup")).toBe("duplicate");
    expect(o.live(0, "restart")).toBe("next");
    expect(o.live(1, "after")).toBe("next");
  });

  test("a live seq equal to the previous live one is a restart too, not a duplicate", () => {
    const o = new ReplayThenLive<number, string>(10);
    o.begin();
    for (const s of [0, 1, 2, 3, 4, 5]) o.replayed(s);
    o.end();
    expect(o.live(2, "dup")).toBe("duplicate");
    expect(o.live(2, "again")).toBe("next"); // a publisher's seqs only grow: the same one again is a restart
  });

  /** A replay whose 2-batch hold received 4 live batches. */
  function overfullHold(): ReplayThenLive<number, number> {
    const o = new ReplayThenLive<number, number>(2);
    o.begin();
    for (const s of [0, 1, 2, 3]) o.live(s, s);
    return o;
  }

  test("a full hold refuses live batches and counts them", () => {
    const o = overfullHold();
    expect(o.end()).toEqual({ next: [{ seq: 0, item: 0 }, { seq: 1, item: 1 }], duplicates: 0, refused: 2 });
  });

  test("a replay reply after the end changes nothing", () => {
    const o = overfullHold();
    o.end();
    o.replayed(9);
    expect(o.live(4, 4)).toBe("next");
  });
});
