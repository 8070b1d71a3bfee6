import { expect, test } from "bun:test";
import type { DiscoveryStore, LeasedRecord } from "../../discovery/store.ts";
import { REGISTER_CONCURRENCY, registerWorkers, type RegistrationPlan } from "./registration.ts";

/** A store whose puts resolve on the next turn, tracking how many are in flight at once. */
function fakeStore(failOn?: (key: string) => boolean) {
  const puts: string[] = [];
  const withdrawn: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const store = {
    backend: "fake",
    async put(key: string): Promise<LeasedRecord> {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((r) => setImmediate(r));
      inFlight--;
      if (failOn?.(key)) throw new Error(`cannot write ${key}`);
      puts.push(key);
      const record = { key, update: async () => {}, withdraw: async () => void withdrawn.push(key), [Symbol.asyncDispose]: async () => {} };
      return record;
    },
  } as unknown as DiscoveryStore;
  return { store, puts, withdrawn, maxInFlight: () => maxInFlight };
}

function plan(store: DiscoveryStore, workers: number, over: Partial<RegistrationPlan<number>> = {}) {
  const kept: string[] = [];
  const registered: number[] = [];
  const p: RegistrationPlan<number> = {
    store,
    workers: Array.from({ length: workers }, (_, i) => i),
    recordsOf: (w) => [
      { key: `ns/workers/w${w}`, value: {} },
      { key: `ns/intents/w${w}-r0`, value: {} },
      { key: `ns/intents/w${w}-r1`, value: {} },
    ],
    staggerDelayS: 0,
    keep: async (r) => (kept.push(r.key), true),
    registered: (w) => registered.push(w),
    closing: () => false,
    ...over,
  };
  return { p, kept, registered };
}

test("every worker registers its record before its intents, a bounded number at a time", async () => {
  const s = fakeStore();
  const { p, kept, registered } = plan(s.store, 100);
  await registerWorkers(p);
  expect(registered.sort((a, b) => a - b)).toEqual(p.workers as number[]);
  expect(kept).toHaveLength(300);
  for (let w = 0; w < 100; w++) {
    const order = [`ns/workers/w${w}`, `ns/intents/w${w}-r0`, `ns/intents/w${w}-r1`].map((k) => s.puts.indexOf(k));
    expect(order).toEqual([...order].sort((a, b) => a - b));
  }
  expect(s.maxInFlight()).toBe(REGISTER_CONCURRENCY);
});

test("with a stagger delay workers register one after another, the delay between them", async () => {
  const s = fakeStore();
  const sleeps: number[] = [];
  const { p, registered } = plan(s.store, 4, { staggerDelayS: 0.25, sleep: async (ms) => void sleeps.push(ms) });
  await registerWorkers(p);
  expect(registered).toEqual([0, 1, 2, 3]);
  expect(sleeps).toEqual([250, 250, 250]);
  expect(s.maxInFlight()).toBe(1);
});

test("a failed put rejects with its error, every record put before or alongside it kept", async () => {
  const s = fakeStore((key) => key === "ns/intents/w40-r1");
  const { p, kept, registered } = plan(s.store, 100);
  await expect(registerWorkers(p)).rejects.toThrow("cannot write ns/intents/w40-r1");
  // Nothing put is lost: the caller withdraws exactly what was kept.
  expect([...kept].sort()).toEqual([...s.puts].sort());
  expect(registered).not.toContain(40);
  expect(registered.length).toBeLessThan(100);
});

test("closing mid-way starts no new worker and keeps no record put after close began", async () => {
  const s = fakeStore();
  let closing = false;
  const kept: string[] = [];
  const { p } = plan(s.store, 100, {
    closing: () => closing,
    keep: async (r) => {
      if (kept.length === 20) closing = true;
      if (closing) {
        await r.withdraw();
        return false;
      }
      kept.push(r.key);
      return true;
    },
  });
  await registerWorkers(p);
  expect(kept).toHaveLength(20);
  expect(s.puts.length).toBeLessThan(300);
  expect([...kept, ...s.withdrawn].sort()).toEqual([...s.puts].sort());
});
