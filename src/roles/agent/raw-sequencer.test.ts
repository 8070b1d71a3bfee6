import { describe, expect, test } from "bun:test";
import { RawSequencer, type SequencerSink } from "./raw-sequencer.ts";

/** Records what the sequencer asks of its slot, as a readable log. */
function harness(hasReplay: boolean, hasDump = false) {
  const log: string[] = [];
  const sink: SequencerSink = {
    apply: (seq, _p, replayed) => log.push(`${replayed ? "replayed" : "apply"} ${seq}`),
    resync: (reason) => log.push(`resync: ${reason}`),
    requestReplay: (from) => log.push(`replay from ${from}`),
    requestDump: () => log.push("dump?"),
    applyDump: (seq) => {
      log.push(`dump at ${seq}`);
      return undefined;
    },
  };
  const s = new RawSequencer(sink, hasReplay, hasDump);
  const p = new Uint8Array(0);
  return { s, log, live: (...seqs: number[]) => seqs.forEach((q) => s.live(q, p)), replay: (...seqs: number[]) => seqs.forEach((q) => s.replayed(q, p)) };
}

describe("RawSequencer", () => {
  test("in-order batches are applied", () => {
    const h = harness(false);
    h.live(0, 1, 2);
    expect(h.log).toEqual(["apply 0", "apply 1", "apply 2"]);
  });

  test("the cursor is the last seq applied", () => {
    const h = harness(false);
    h.live(0, 1, 2);
    expect(h.s.cursor).toBe(2);
  });

  test("a gap is repaired from replay while live batches are held, their duplicates dropped", () => {
    const h = harness(true);
    h.live(0, 3);
    expect(h.log).toEqual(["apply 0", "replay from 1"]);
    h.live(4);
    h.replay(1, 2, 3, 4);
    h.s.replayEnded();
    h.live(5);
    expect(h.log.slice(2)).toEqual(["replayed 1", "replayed 2", "replayed 3", "replayed 4", "apply 5"]);
    expect(h.s.counters).toMatchObject({ gaps: 1, recovered: 4, dropped: 0, duplicates: 2 });
  });

  test("without replay a gap is counted as loss and the slot resynchronised", () => {
    const h = harness(false);
    h.live(0, 4);
    expect(h.log).toEqual(["apply 0", "resync: gap: expected seq 1, got 4", "apply 4"]);
    expect(h.s.counters).toMatchObject({ gaps: 1, dropped: 3 });
  });

  test("a replay that starts after the requested seq counts the hole and rebuilds from what it holds", () => {
    const h = harness(true);
    h.s.start();
    h.replay(5, 6);
    h.s.replayEnded();
    h.live(7);
    expect(h.log).toEqual(["replay from 0", expect.stringContaining("resync: replay starts at seq 5"), "replayed 5", "replayed 6", "apply 7"]);
    expect(h.s.counters.dropped).toBe(5);
  });

  test("late join without replay: earlier batches counted lost", () => {
    const h = harness(false);
    h.live(7, 8);
    expect(h.s.counters.dropped).toBe(7);
    expect(h.log.filter((l) => l.startsWith("apply"))).toEqual(["apply 7", "apply 8"]);
  });

  test("late join at seq 1 without replay: batch 0 counted lost", () => {
    const h = harness(false);
    h.live(1, 2);
    expect(h.s.counters.dropped).toBe(1);
    expect(h.log).toEqual(["resync: joined at seq 1 with no replay of 0..0", "apply 1", "apply 2"]);
  });

  test("a sequencer made without the dump flag has no dump: a gap without replay is lost, no dump asked for", () => {
    const log: string[] = [];
    const s = new RawSequencer(
      { apply: (seq) => log.push(`apply ${seq}`), resync: () => log.push("resync"), requestReplay: () => log.push("replay?"), requestDump: () => log.push("dump?"), applyDump: () => undefined },
      false,
    );
    for (const q of [0, 3]) s.live(q, new Uint8Array(0));
    expect(log).toEqual(["apply 0", "resync", "apply 3"]);
    expect(s.counters.dropped).toBe(2);
  });

  test("late join with replay back-fills from 0", () => {
    const h = harness(true);
    h.live(3);
    h.replay(0, 1, 2, 3);
    h.s.replayEnded();
    expect(h.log).toEqual(["replay from 0", "replayed 0", "replayed 1", "replayed 2", "replayed 3"]);
    expect(h.s.counters.dropped).toBe(0);
  });

  test("a lower seq means the publisher restarted: resync before applying", () => {
    const h = harness(false);
    h.live(0, 1, 2, 0, 1);
    expect(h.log).toEqual(["apply 0", "apply 1", "apply 2", "resync: publisher restarted (seq 0 after 2)", "apply 0", "apply 1"]);
    expect(h.s.counters.restarts).toBe(1);
  });

  test("a silent replay (deadline) gives up the remaining hole as lost and continues with the held batches", () => {
    const h = harness(true);
    h.live(0, 5);
    h.s.replayEnded();
    expect(h.log).toEqual(["apply 0", "replay from 1", "resync: gap: expected seq 1, got 5", "apply 5"]);
    expect(h.s.counters).toMatchObject({ gaps: 1, dropped: 4 });
  });

  test("replies after the repair ended are ignored", () => {
    const h = harness(true);
    h.live(0, 2);
    h.s.replayEnded();
    h.replay(1);
    expect(h.log.filter((l) => l.startsWith("replayed"))).toEqual([]);
  });

  test("after a repair, a live seq at or below the previous live one is a restart, not a duplicate", () => {
    const h = harness(true);
    h.live(0, 2, 3); // gap at 1: 2 and 3 held
    h.replay(1, 2, 3);
    h.s.replayEnded();
    h.live(0); // the publisher restarted: 0 ≤ the last live seq 3
    expect(h.log.slice(-2)).toEqual(["resync: publisher restarted (seq 0 after 3)", "apply 0"]);
    expect(h.s.counters).toMatchObject({ restarts: 1, duplicates: 2 });
  });

  test("a live duplicate of a replayed seq that arrives after the end marker is dropped", () => {
    const h = harness(true);
    h.live(0, 2);
    h.replay(1, 2, 3); // the replay already holds 3, which is still on its way on the live stream
    h.s.replayEnded();
    h.live(3, 4);
    expect(h.log.filter((l) => l.startsWith("apply"))).toEqual(["apply 0", "apply 4"]);
    expect(h.s.counters.duplicates).toBe(2);
  });

  test("a replay reply far ahead of the gap is dropped and counted, not applied: the repair completes with the in-range replies", () => {
    const h = harness(true);
    h.live(0, 3);
    expect(h.s.replayed(1_000_000, new Uint8Array(0))).toBe("out-of-range");
    h.replay(1, 2);
    h.s.replayEnded();
    h.live(4);
    expect(h.log).toEqual(["apply 0", "replay from 1", "replayed 1", "replayed 2", "apply 3", "apply 4"]);
    expect(h.s.counters).toMatchObject({ replayOutOfRange: 1, recovered: 2, dropped: 0 });
  });

  test("a replay reply below the requested seq is out of range, not a duplicate", () => {
    const h = harness(true);
    h.live(0, 1, 2, 5);
    h.replay(1, 3, 4);
    h.s.replayEnded();
    expect(h.log.slice(3)).toEqual(["replay from 3", "replayed 3", "replayed 4", "apply 5"]);
    expect(h.s.counters).toMatchObject({ replayOutOfRange: 1, duplicates: 0, recovered: 2 });
  });

  test("a repair that brings only out-of-range replies counts the gap lost and resyncs", () => {
    const h = harness(true);
    h.live(0, 5);
    h.replay(9_999);
    h.s.replayEnded();
    h.live(6);
    expect(h.log).toEqual(["apply 0", "replay from 1", "resync: gap: expected seq 1, got 5", "apply 5", "apply 6"]);
    expect(h.s.counters).toMatchObject({ replayOutOfRange: 1, dropped: 4 });
  });

  describe("state dump", () => {
    test("a replay window exceeded on attach: the slot is degraded, live is held, the dump replaces the residency and live follows from its seq + 1", () => {
      const h = harness(true, true);
      h.s.start();
      h.replay(5, 6);
      h.live(8, 9);
      h.s.replayEnded();
      expect(h.s.degraded).toBe(true);
      expect(h.s.isDumping).toBe(true);
      h.live(10);
      h.s.dumpArrived(9, new Uint8Array(0));
      h.live(11);
      expect(h.log).toEqual(["replay from 0", expect.stringContaining("resync: replay starts at seq 5"), "dump?", "dump at 9", "apply 10", "apply 11"]);
      expect(h.s.degraded).toBe(false);
      expect(h.s.cursor).toBe(11);
      expect(h.s.counters).toMatchObject({ dumpsApplied: 1, duplicates: 2 });
    });

    test("without replay a gap asks for the dump at once; batches the dump covers are dropped as duplicates", () => {
      const h = harness(false, true);
      h.live(0, 4, 5, 6);
      h.s.dumpArrived(5, new Uint8Array(0));
      h.live(7);
      expect(h.log).toEqual(["apply 0", "resync: gap: expected seq 1, got 4", "dump?", "dump at 5", "apply 6", "apply 7"]);
    });

    test("a failed dump leaves the slot degraded on the cleared residency, filling from live; a retry that works ends it", () => {
      const h = harness(false, true);
      h.live(0, 3, 4);
      h.s.dumpFailed("answered 500");
      h.live(5);
      expect(h.s.degraded).toBe(true);
      expect(h.log.slice(3)).toEqual(["resync: state dump failed: answered 500", "apply 3", "apply 4", "apply 5"]);
      h.s.retryDump();
      h.live(6);
      h.s.dumpArrived(6, new Uint8Array(0));
      expect(h.s.degraded).toBe(false);
      expect(h.s.counters).toMatchObject({ dumpsFailed: 1, dumpsApplied: 1 });
    });

    test("a dump retry that comes during a replay repair waits for the repair and then runs (not dropped)", () => {
      const h = harness(true, true);
      h.live(0, 3);
      h.s.replayEnded(); // the repair of 1..2 gave nothing: lost, the dump is asked for
      h.s.dumpFailed("answered 500");
      h.live(4, 7); // a new gap: a repair starts
      expect(h.s.isRepairing).toBe(true);
      h.s.retryDump(); // the retry timer fires meanwhile
      h.replay(5, 6);
      h.s.replayEnded();
      expect(h.s.isDumping).toBe(true);
      h.s.dumpArrived(7, new Uint8Array(0));
      expect(h.s.degraded).toBe(false);
    });

    test("without a dump a loss leaves the slot degraded until the publisher starts again from 0", () => {
      const h = harness(false);
      h.live(0, 3);
      expect(h.s.degraded).toBe(true);
      h.live(0);
      expect(h.s.degraded).toBe(false);
    });

    test("an unusable batch (payload over the limit) during the dump drain asks for another dump", () => {
      const log: string[] = [];
      let s: RawSequencer;
      const sink: SequencerSink = {
        apply: (seq) => {
          log.push(`apply ${seq}`);
          if (seq === 7) s.lostBatch("too big");
        },
        resync: (reason) => log.push(`resync: ${reason}`),
        requestReplay: () => log.push("replay?"),
        requestDump: () => log.push("dump?"),
        applyDump: (seq) => void log.push(`dump at ${seq}`),
      };
      s = new RawSequencer(sink, false, true);
      const p = new Uint8Array(0);
      s.live(3, p);
      s.live(6, p);
      s.live(7, p);
      s.live(8, p);
      s.dumpArrived(5, p);
      expect(log).toEqual(["resync: joined at seq 3 with no replay of 0..2", "dump?", "dump at 5", "apply 6", "apply 7", "resync: too big", "dump?"]);
      expect(s.isDumping).toBe(true);
      s.dumpArrived(8, p);
      expect(s.degraded).toBe(false);
      expect(s.cursor).toBe(8);
    });
  });
});
