import { describe, expect, test } from "bun:test";
import { createLogger } from "../../lib/logger.ts";
import { createBlockHasher } from "../../lib/xxh3.ts";
import { AgentSlot, DEFAULT_MAX_EVENT_PAYLOAD_BYTES, socketMessageLimit } from "./slot.ts";
import { SlotTable } from "./slot-table.ts";
import type { SourceIntent } from "./sources.ts";

const logger = createLogger({ level: "silent" });
const owner = (n: number) => `${"ab".repeat(16)}:${"cd".repeat(16)}/${"0".repeat(16)}/${n.toString(16).padStart(32, "0")}`;
// Port 9 (discard) on loopback: the slots' SUBs just keep retrying in the background.
const intent = (n: number, extra: Partial<SourceIntent> = {}): SourceIntent => ({
  cache_owner_id: owner(n), worker_id: `w${n}`, dp_rank: 0, block_size: 4, ingress_protocol: "vllm_residency_v1",
  raw_endpoint: "tcp://127.0.0.1:9", raw_topic: "", incarnation: 1, ...extra,
});

function table(maxSlots: number, changed: () => void = () => {}) {
  const timers: { fn: () => void; cancelled: boolean }[] = [];
  const t = new SlotTable({
    maxSlots,
    retentionMs: 1000,
    logger,
    schedule: (fn) => {
      const timer = { fn, cancelled: false };
      timers.push(timer);
      return () => (timer.cancelled = true);
    },
    createSlot: (id, i) =>
      new AgentSlot(id, i, {
        logger, hasher: createBlockHasher(), emit: () => {}, flush: () => 0, nowSeconds: () => 0, nowMs: () => 0,
        observeLagSeconds: () => {}, replayTimeoutMs: 1000, changed,
      }),
  });
  const fire = () => timers.splice(0).forEach((x) => !x.cancelled && x.fn());
  const states = () => Object.fromEntries(t.slots().map((s) => [s.intent.worker_id, s.state]));
  return { t, fire, states };
}

describe("SlotTable", () => {
  test("capacity: owners beyond max-slots are rejected once, and admitted when a slot is freed", () => {
    const { t, fire, states } = table(1);
    try {
      t.put("k1", intent(1));
      t.put("k2", intent(2));
      t.put("k2", intent(2, { incarnation: 2 }));
      expect(t.capacityRejected).toBe(1);
      expect(states()).toEqual({ w1: "active" });
      t.remove("k1");
      expect(states()).toEqual({ w1: "detached" });
      fire(); // retention over: slot 1 freed, owner 2 admitted
      expect(states()).toEqual({ w2: "active" });
    } finally {
      t.close();
    }
  });

  test("durable: an owner whose intent returns within retention re-attaches to its slot", () => {
    const { t, fire, states } = table(1);
    try {
      t.put("k1", intent(1));
      t.remove("k1");
      t.put("k1b", intent(1, { incarnation: 2 }));
      fire(); // the cancelled retention timer does nothing
      expect(states()).toEqual({ w1: "active" });
      expect(t.slots()[0]!.intent.incarnation).toBe(2);
      expect(t.size).toBe(1);
    } finally {
      t.close();
    }
  });

  test("admit: true for an owner with a slot or a free slot, false (nothing registered) when every slot is taken", () => {
    const { t, states } = table(1);
    try {
      expect(t.admit("k1", intent(1))).toBe(true);
      expect(t.admit("k2", intent(2))).toBe(false);
      expect(t.hasOrigin("k2")).toBe(false);
      expect(t.admit("k1b", intent(1, { incarnation: 2 }))).toBe(true);
      expect(states()).toEqual({ w1: "failed" }); // two live intents of owner 1
    } finally {
      t.close();
    }
  });

  test("admit rolls back an attach that throws: a retained slot is detached again and freed when its retention ends", () => {
    let failing = false;
    const { t, fire, states } = table(1, () => {
      if (failing) {
        failing = false; // once: the rollback's own detach goes through
        throw new Error("record store down");
      }
    });
    try {
      t.put("k1", intent(1));
      t.remove("k1");
      failing = true;
      expect(() => t.admit("runtime", intent(1, { incarnation: 2 }))).toThrow("record store down");
      expect(t.hasOrigin("runtime")).toBe(false);
      expect(states()).toEqual({ w1: "detached" });
      fire();
      expect(states()).toEqual({});
      expect(t.size).toBe(0);
    } finally {
      t.close();
    }
  });

  test("two live intents for one owner fail the slot until one goes away", () => {
    const { t, states } = table(4);
    try {
      t.put("k1", intent(1));
      t.put("k2", intent(1, { worker_id: "w1", raw_endpoint: "tcp://127.0.0.1:10" }));
      expect(states()).toEqual({ w1: "failed" });
      expect(t.slots()[0]!.fault).toContain("ambiguous: 2 live intents");
      t.put("k3", intent(1, { worker_id: "w1", raw_endpoint: "tcp://127.0.0.1:12" }));
      expect(t.slots()[0]!.fault).toContain("ambiguous: 3 live intents"); // still failed, the fault follows
      t.remove("k3");
      t.remove("k2");
      expect(states()).toEqual({ w1: "active" });
    } finally {
      t.close();
    }
  });

  test("a quarantined slot stays quarantined for the same incarnation and recovers on a new one", () => {
    const { t, states } = table(4);
    try {
      t.put("k1", intent(1));
      t.slots()[0]!.quarantine("test fault");
      t.put("k1", intent(1, { raw_endpoint: "tcp://127.0.0.1:11" }));
      expect(states()).toEqual({ w1: "quarantined" });
      t.put("k1", intent(1, { incarnation: 2 }));
      expect(states()).toEqual({ w1: "active" });
    } finally {
      t.close();
    }
  });
});

describe("slot payload limits", () => {
  test("the payload default is --max-event-payload-bytes' documented 16777216; a socket takes twice the payload plus 64 KiB", () => {
    expect(DEFAULT_MAX_EVENT_PAYLOAD_BYTES).toBe(16_777_216);
    expect(socketMessageLimit(1024)).toBe(2048 + 65_536);
    expect(socketMessageLimit(16_777_216)).toBe(33_619_968);
  });
});
