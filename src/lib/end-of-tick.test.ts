// endOfTick: every item asked for in one tick runs in one microtask, after the synchronous code,
// in order; items asked for while that microtask runs (or later) run in a fresh one.
import { expect, test } from "bun:test";
import { endOfTick } from "./end-of-tick.ts";

test("runs each scheduled item once, after the current synchronous code, in one microtask", async () => {
  const ran: string[] = [];
  let microtasks = 0;
  const original = globalThis.queueMicrotask;
  globalThis.queueMicrotask = (cb) => {
    microtasks++;
    original(cb);
  };
  try {
    const later = endOfTick((item: string) => ran.push(item));
    later("a");
    later("b");
    later("a");
    expect(ran).toEqual([]);
    await Promise.resolve();
    expect(ran).toEqual(["a", "b", "a"]);
    expect(microtasks).toBe(1);
  } finally {
    globalThis.queueMicrotask = original;
  }
});

test("an item scheduled from inside a run goes out in a fresh microtask, not lost", async () => {
  const ran: number[] = [];
  const later: (n: number) => void = endOfTick((n: number) => {
    ran.push(n);
    if (n < 3) later(n + 1);
  });
  later(1);
  await Bun.sleep(0); // every pending microtask has run by the next macrotask
  expect(ran).toEqual([1, 2, 3]);
});
