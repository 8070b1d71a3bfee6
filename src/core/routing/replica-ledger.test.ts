import { describe, expect, test } from "bun:test";
import type { ReplicaBatch, ReplicaEvent } from "../../protocol/replica-sync.ts";
import { ReplicaLedger, type RemoteLoad } from "./replica-ledger.ts";

/** A load that records what it was told; worker "gone" is unknown. */
function recordingLoad() {
  const log: string[] = [];
  let n = 0;
  const load: RemoteLoad<string> = {
    add: (w, r, hashes, prefill) => (w === "gone" ? undefined : (log.push(`add ${w}/${r} ${hashes.length} ${prefill}`), `h${++n}`)),
    firstToken: (h) => void log.push(`first ${h}`),
    free: (h) => void log.push(`free ${h}`),
  };
  return { load, log };
}

const add = (requestId: number, workerId = "w"): ReplicaEvent => ({ kind: "add", requestId, workerId, dpRank: 0, hashes: [1n, 2n], prefillTokens: 8 });
const ev = (kind: "free" | "prefill_completed", requestId: number): ReplicaEvent => ({ kind, requestId, workerId: "w", dpRank: 0 });
const batch = (routerId: string, seq: number, events: ReplicaEvent[], live: number[] | null = null): ReplicaBatch => ({ routerId, seq, sentAtMs: 0, live, events });

describe("replica ledger", () => {
  test("one missing batch between two is one lost; consecutive ones lose none", () => {
    const { load } = recordingLoad();
    const l = new ReplicaLedger("me", load, 1000);
    expect(l.receive(batch("r", 1, []), 0).lost).toBe(0);
    expect(l.receive(batch("r", 2, []), 0).lost).toBe(0);
    expect(l.receive(batch("r", 4, []), 0).lost).toBe(1);
    expect(l.receive(batch("r", 8, []), 0).lost).toBe(3);
  });

  test("applies another replica's add, prefill_completed and free; skips its own; ignores what it cannot apply", () => {
    const { load, log } = recordingLoad();
    const l = new ReplicaLedger("me", load, 1000);
    expect(l.receive(batch("me", 1, [add(1)]), 0).applied).toBe(0);
    expect(l.receive(batch("r", 1, [add(1), ev("prefill_completed", 1), add(2, "gone"), ev("free", 5)]), 0)).toEqual({ applied: 2, ignored: 2, lost: 0, staleFreed: 0 });
    expect(l.requestCount).toBe(1);
    expect(l.receive(batch("r", 2, [add(1), ev("free", 1), ev("free", 1)]), 0)).toEqual({ applied: 1, ignored: 2, lost: 0, staleFreed: 0 });
    expect(log).toEqual(["add w/0 2 8", "first h1", "free h1"]);
    expect(l.requestCount).toBe(0);
  });

  test("counts lost batches and frees what a heartbeat no longer lists", () => {
    const { load, log } = recordingLoad();
    const l = new ReplicaLedger("me", load, 1000);
    l.receive(batch("r", 1, [add(1), add(2), add(3)]), 0);
    const out = l.receive(batch("r", 4, [], [2]), 0);
    expect(out).toEqual({ applied: 0, ignored: 0, lost: 2, staleFreed: 2 });
    expect(log.filter((x) => x.startsWith("free"))).toEqual(["free h1", "free h3"]);
    expect(l.requestCount).toBe(1);
  });

  test("a replica silent past the timeout has its requests freed; one that speaks stays", () => {
    const { load, log } = recordingLoad();
    const l = new ReplicaLedger("me", load, 1000);
    l.receive(batch("quiet", 1, [add(1), add(2)]), 0);
    l.receive(batch("talks", 1, [add(1)]), 0);
    expect(l.expire(1000)).toEqual([]);
    l.receive(batch("talks", 2, [], [1]), 900);
    expect(l.expire(1001)).toEqual(["quiet"]);
    expect(log.filter((x) => x.startsWith("free"))).toEqual(["free h1", "free h2"]);
    expect([l.replicaCount, l.requestCount, l.expiredReplicas, l.expiredRequests]).toEqual([1, 1, 1, 2]);
    l.clear();
    expect(l.requestCount).toBe(0);
  });
});
