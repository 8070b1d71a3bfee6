import { describe, expect, test } from "bun:test";
import { applyMutant, codeOf, mutantsOf, spread } from "./mutants.ts";

/** Each mutant as "line: mutated line" (trimmed), for compact comparison. */
const shown = (source: string) => mutantsOf(source).map((m) => `${m.line}: ${m.mutated.trim()}`);

describe("mutant generator", () => {
  test("comparisons flip at their boundary and in their sense; + and - swap", () => {
    expect(shown("if (a < b) x = a + 1;")).toEqual([
      "1: if (a <= b) x = a + 1;",
      "1: if (a < b) x = a - 1;",
      "1: if (a < b) x = a + 2;",
      "1: if (a < b) x = a + 0;",
      "1: if (!(a < b)) x = a + 1;",
    ]);
    expect(shown("const ok = n >= max && id !== prev;")).toEqual(["1: const ok = n > max && id !== prev;", "1: const ok = n >= max && id === prev;"]);
    expect(shown("const same = a === b || c > d || e <= f;").map((s) => s.slice(3))).toEqual([
      "const same = a !== b || c > d || e <= f;",
      "const same = a === b || c >= d || e <= f;",
      "const same = a === b || c > d || e < f;",
    ]);
  });

  test("booleans flip; integers move by one and to 0, hex, decimals, bigints and separators' parts aside", () => {
    expect(shown("let done = false;")).toEqual(["1: let done = true;"]);
    expect(shown("const W = 16_384;")).toEqual(["1: const W = 16385;", "1: const W = 16383;", "1: const W = 0;"]);
    expect(shown("const one = 1;")).toEqual(["1: const one = 2;", "1: const one = 0;"]);
    expect(shown("h = Math.imul(h, 0x01000193) * 0.5 + 7n;")).toEqual(["1: h = Math.imul(h, 0x01000193) * 0.5 - 7n;"]);
  });

  test("a call statement on one line is dropped (an empty statement stays); a declaration or multi-line call is not", () => {
    expect(mutantsOf("    this.putWorker(entry.record);").map((m) => [m.operator, m.mutated])).toEqual([["drop-call", "    ;"]]);
    expect(shown("await q.drain();")).toEqual(["1: ;"]);
    expect(shown("return f(x);")).toEqual([]);
    expect(shown("const y = f(x);")).toEqual([]);
    expect(shown("foo(a,")).toEqual([]);
    expect(shown("f(a)(b);")).toEqual([]);
  });

  test("comments, imports, types and string contents are left alone", () => {
    const source = [
      "// a < b is 1 + 2",
      "/* true",
      "   a > b */",
      " * 3 - 4",
      'import { x } from "./x.ts";',
      "export type T = A | B;",
      "interface I { n: number }",
      'log("a < b, 1 + 2, true");',
      "const s = `x - ${y} > 3`; // c < d",
    ].join("\n");
    expect(mutantsOf(source).map((m) => m.operator)).toEqual(["drop-call"]);
    expect(codeOf('f("a < b") < 2 // x < y')).toBe('f("     ") < 2         ');
  });

  test("applyMutant changes exactly its line, and refuses a line that changed", () => {
    const source = "a();\nif (x > 0) b();\nc();";
    const m = mutantsOf(source).find((m) => m.operator === "comparison")!;
    expect(applyMutant(source, m)).toBe("a();\nif (x >= 0) b();\nc();");
    expect(() => applyMutant("a();\nchanged\nc();", m)).toThrow("line 2");
  });

  test("spread keeps at most max items, evenly from first to last, the same every time", () => {
    const items = Array.from({ length: 10 }, (_, i) => i);
    expect(spread(items, 4)).toEqual([0, 2, 5, 7]);
    expect(spread(items, 20)).toEqual(items);
  });
});
