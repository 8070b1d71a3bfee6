import { expect, test } from "bun:test";
import { belowEphemeral, holdPort, pickFreePorts, portFree } from "./port-hold.ts";
import { ephemeralRange } from "./port-plan.ts";

test("pickFreePorts: distinct ports below the ephemeral range, free once returned", () => {
  const [lo] = ephemeralRange();
  const ports = pickFreePorts("127.0.0.1", 20);
  expect(new Set(ports).size).toBe(20);
  const [a, b] = belowEphemeral();
  expect(b).toBeLessThan(lo);
  for (const p of ports) {
    expect(p).toBeGreaterThanOrEqual(a);
    expect(p).toBeLessThanOrEqual(b);
    expect(portFree("127.0.0.1", p)).toBe(true);
  }
});

test("portFree is false while a port is held, and pickFreePorts steps over it", () => {
  const held = holdPort("127.0.0.1");
  try {
    expect(portFree("127.0.0.1", held.port)).toBe(false);
    expect(pickFreePorts("127.0.0.1", 3, [held.port, held.port + 3])).not.toContain(held.port);
  } finally {
    held.close();
  }
});
