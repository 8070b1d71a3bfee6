import { expect, test } from "bun:test";
import { holdPort, pickFreePorts } from "./port-hold.ts";
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
