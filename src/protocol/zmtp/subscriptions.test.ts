import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { SubscriptionSet } from "./subscriptions.ts";

const te = new TextEncoder();
const b = (s: string) => te.encode(s);

describe("SubscriptionSet", () => {
  test("prefix matching on the first frame", () => {
    const s = new SubscriptionSet();
    expect(s.matches(b("kv"))).toBe(false);
    s.add(b("kv@"));
    expect(s.matches(b("kv@w1"))).toBe(true);
    expect(s.matches(b("kv"))).toBe(false);
    expect(s.matches(b("xkv@"))).toBe(false);
    expect(s.matches(undefined)).toBe(false);
  });

  test("the empty prefix matches everything, including an empty topic frame", () => {
    const s = new SubscriptionSet();
    s.add(new Uint8Array(0));
    expect(s.matches(new Uint8Array(0))).toBe(true);
    expect(s.matches(b("anything"))).toBe(true);
    expect(s.size).toBe(1);
  });

  test("reference counts: a prefix stays until every subscription is cancelled", () => {
    const s = new SubscriptionSet();
    expect(s.add(b("a"))).toBe(true);
    expect(s.add(b("a"))).toBe(false);
    expect(s.remove(b("a"))).toBe(false);
    expect(s.matches(b("ab"))).toBe(true);
    expect(s.remove(b("a"))).toBe(true);
    expect(s.matches(b("ab"))).toBe(false);
    expect(s.remove(b("a"))).toBe(false);
    expect(s.remove(new Uint8Array(0))).toBe(false);
  });

  test("topics lists the prefixes added, each a copy of the caller's bytes", () => {
    const s = new SubscriptionSet();
    const p = b("x");
    s.add(p);
    s.add(new Uint8Array(0));
    p[0] = 0x79;
    expect(s.topics().map((t) => new TextDecoder().decode(t)).sort()).toEqual(["", "x"]);
  });

  test("clear empties the set", () => {
    const s = new SubscriptionSet();
    s.add(b("x"));
    s.add(new Uint8Array(0));
    s.add(b("yz"));
    expect(s.bytes).toBe(3);
    s.clear();
    expect(s.size).toBe(0);
    expect(s.bytes).toBe(0);
    s.add(b("abc"));
    expect(s.bytes).toBe(3);
  });
});

describe("SubscriptionSet against a plain list (the trie's model)", () => {
  const bytes = fc.uint8Array({ maxLength: 6 }).map((a) => a.map((x) => x % 3)); // few symbols: shared prefixes and splits
  const op = fc.oneof(fc.record({ add: bytes }), fc.record({ remove: bytes }), fc.record({ match: bytes }));
  const key = (a: Uint8Array) => Array.from(a).join(",");

  test("add, remove and match agree with reference-counted prefixes in a list", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), (ops) => {
        const s = new SubscriptionSet();
        const model = new Map<string, { prefix: Uint8Array; n: number }>();
        for (const o of ops) {
          if ("add" in o) {
            const e = model.get(key(o.add));
            expect(s.add(o.add)).toBe(e === undefined);
            if (e) e.n++;
            else model.set(key(o.add), { prefix: o.add.slice(), n: 1 });
          } else if ("remove" in o) {
            const e = model.get(key(o.remove));
            expect(s.remove(o.remove)).toBe(e?.n === 1);
            if (e && --e.n === 0) model.delete(key(o.remove));
          } else {
            const want = [...model.values()].some(({ prefix }) => prefix.length <= o.match.length && prefix.every((x, i) => o.match[i] === x));
            expect(s.matches(o.match)).toBe(want);
            expect(s.has(o.match)).toBe(model.has(key(o.match)));
          }
          expect(s.size).toBe(model.size);
          expect(s.bytes).toBe([...model.values()].reduce((t, e) => t + e.prefix.length, 0));
        }
        expect(s.topics().map(key).sort()).toEqual([...model.keys()].sort());
      }),
      { numRuns: 500 },
    );
  });

  test("removing every prefix leaves no node behind (memory returns to empty)", () => {
    const s = new SubscriptionSet();
    const prefixes = Array.from({ length: 2000 }, (_, i) => b(`kv@${i}`));
    for (const p of prefixes) s.add(p);
    for (const p of prefixes) s.remove(p);
    expect(s.size).toBe(0);
    expect(s.bytes).toBe(0);
    expect(s.topics()).toEqual([]);
    expect((s as unknown as { root: { children: unknown } }).root.children).toBeUndefined();
  });
});
