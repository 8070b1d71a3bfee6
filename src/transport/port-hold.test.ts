import { expect, test } from "bun:test";
import { holdPort, pickFreePorts, pickFreeRange } from "./port-hold.ts";
import { ephemeralRange } from "./port-plan.ts";

test("ports picked for children are distinct, free, and outside the kernel's ephemeral range", () => {
  const [lo, hi] = ephemeralRange();
  const ports = pickFreePorts("127.0.0.1", 6);
  expect(new Set(ports).size).toBe(6);
  for (const p of ports) {
    expect(p < lo || p > hi).toBe(true);
    holdPort("127.0.0.1", p).close(); // released: bindable again
  }
});

test("a port in use is never picked (a range with nothing free falls back to the kernel's choice)", () => {
  const held = holdPort("127.0.0.1");
  try {
    const ports = pickFreePorts("127.0.0.1", 1, [held.port, held.port]);
    expect(ports).toHaveLength(1);
    expect(ports[0]).not.toBe(held.port);
  } finally {
    held.close();
  }
});

test("pickFreeRange: the first of count consecutive free ports, around one that is held; none is a clear error", () => {
  const probe = holdPort("127.0.0.1", 0);
  const lo = Math.max(1024, Math.min(probe.port, 60_000) - 20);
  probe.close();
  const held = holdPort("127.0.0.1", lo + 3);
  try {
    for (let i = 0; i < 5; i++) {
      const start = pickFreeRange("127.0.0.1", 3, [lo, lo + 9]);
      expect(start).toBeGreaterThanOrEqual(lo);
      expect(start + 2).toBeLessThanOrEqual(lo + 9);
      expect(lo + 3 >= start && lo + 3 < start + 3).toBe(false);
      const all = [0, 1, 2].map((d) => holdPort("127.0.0.1", start + d));
      for (const h of all) h.close();
    }
    expect(() => pickFreeRange("127.0.0.1", 3, [lo + 3, lo + 5])).toThrow(`no 3 consecutive free ports found on 127.0.0.1 between ${lo + 3} and ${lo + 5}`);
  } finally {
    held.close();
  }
});
