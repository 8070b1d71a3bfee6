import { describe, expect, test } from "bun:test";
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
    s.clear();
    expect(s.size).toBe(0);
  });
});
