import { describe, expect, test } from "bun:test";
import { holdPort } from "./port-hold.ts";
import { createPortPlan, ephemeralRange } from "./port-plan.ts";

const inUse = (port: number) => Object.assign(new Error(`port ${port} in use`), { code: "EADDRINUSE" });

describe("port plan", () => {
  test("hands out consecutive ports, stepping over those in use, wrapping at the end of the range", () => {
    const taken = new Set([11, 13]);
    const plan = createPortPlan({ range: [10, 14], start: 11 });
    const bind = (p: number) => {
      if (taken.has(p)) throw inUse(p);
      taken.add(p);
      return p;
    };
    expect([plan.bindFree(bind), plan.bindFree(bind), plan.bindFree(bind)]).toEqual([12, 14, 10]);
  });

  test("a port in use reported as the cause of a wrapped error counts too", () => {
    const plan = createPortPlan({ range: [10, 12], start: 10 });
    const wrapped = (p: number) => (p === 10 ? (() => { throw new Error("cannot bind", { cause: inUse(p) }); })() : p);
    expect(plan.bindFree(wrapped)).toBe(11);
  });

  test("after maxCollisions ports in use in a row, the kernel picks (port 0)", () => {
    const plan = createPortPlan({ range: [10, 19], start: 10, maxCollisions: 4 });
    const tried: number[] = [];
    const port = plan.bindFree((p) => {
      tried.push(p);
      if (p !== 0) throw inUse(p);
      return 4242;
    });
    expect([port, tried]).toEqual([4242, [10, 11, 12, 13, 0]]);
  });

  test("other bind errors are not collisions: they propagate at once", () => {
    const plan = createPortPlan({ range: [10, 19], start: 10 });
    let tries = 0;
    expect(() =>
      plan.bindFree(() => {
        tries++;
        throw Object.assign(new Error("not this machine's address"), { code: "EADDRNOTAVAIL" });
      }),
    ).toThrow("not this machine's address");
    expect(tries).toBe(1);
  });

  test("real listeners: planned ports are distinct, free and consecutive apart from ports in use", () => {
    const plan = createPortPlan();
    const held = Array.from({ length: 20 }, () => holdPort("127.0.0.1", 0, plan));
    try {
      const ports = held.map((h) => h.port);
      expect(new Set(ports).size).toBe(20);
      const [lo, hi] = ephemeralRange();
      expect(ports.every((p) => p >= lo && p <= hi)).toBe(true);
    } finally {
      for (const h of held) h.close();
    }
  });

  test("ephemeralRange reads Linux's ip_local_port_range, else 32768–60999", () => {
    expect(ephemeralRange(() => "40000\t50000\n")).toEqual([40000, 50000]);
    expect(ephemeralRange(() => "garbage")).toEqual([32768, 60999]);
    expect(ephemeralRange(() => { throw new Error("ENOENT"); })).toEqual([32768, 60999]);
  });
});
