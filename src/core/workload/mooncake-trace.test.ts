import { describe, expect, test } from "bun:test";
import { expandHashIds, parseMooncakeTrace } from "./mooncake-trace.ts";

const line = (o: unknown) => JSON.stringify(o);
const tokensOf = (r: { inputLength: number; writeTokens(out: Uint32Array): void }) => {
  const out = new Uint32Array(r.inputLength);
  r.writeTokens(out);
  return [...out];
};

describe("Mooncake trace parsing", () => {
  test("each hash id expands to trace-block-size copies, truncated to input_length", () => {
    const t = parseMooncakeTrace(line({ timestamp: 5, input_length: 7, output_length: 3, hash_ids: [9, 4, 2] }) + "\n", 3);
    expect(t.errors).toEqual([]);
    expect(t.requests.length).toBe(1);
    const r = t.requests[0]!;
    expect([r.timestampMs, r.inputLength, r.outputLength]).toEqual([5, 7, 3]);
    expect(tokensOf(r)).toEqual([9, 9, 9, 4, 4, 4, 2]);
    expect([...expandHashIds(Uint32Array.from([1, 2]), 4, 512)]).toEqual([1, 1, 1, 1]);
    // Hash ids span the whole u32 range, its largest value included.
    const top = parseMooncakeTrace(line({ timestamp: 0, input_length: 2, output_length: 1, hash_ids: [0, 4294967295] }) + "\n", 1);
    expect(top.errors).toEqual([]);
    expect(tokensOf(top.requests[0]!)).toEqual([0, 4294967295]);
    expect(parseMooncakeTrace(line({ timestamp: 0, input_length: 1, output_length: 1, hash_ids: [4294967296] }) + "\n", 1).errors).toHaveLength(1);
  });

  test("bad lines are reported with their line number and what is wrong", () => {
    const text = [
      line({ timestamp: 0, input_length: 4, output_length: 1, hash_ids: [1] }),
      "{not json",
      "",
      line({ timestamp: 0, input_length: 4, hash_ids: [1] }),
      line({ timestamp: 0, input_length: -4, output_length: 1, hash_ids: [1] }),
      line({ timestamp: 0, input_length: 4, output_length: -1, hash_ids: [1] }),
      line({ timestamp: 0, input_length: 513, output_length: 1, hash_ids: [1] }),
      line({ timestamp: -1, input_length: 4, output_length: 1, hash_ids: [1] }),
      line({ timestamp: 0, input_length: 4, output_length: 1, hash_ids: [1, -2] }),
      line([1, 2]),
      line({ timestamp: 0, input_length: 1.5, output_length: 1, hash_ids: [1] }),
      line({ timestamp: 0, input_length: 0, output_length: 1, hash_ids: [1] }),
      line({ timestamp: 3, input_length: 512, output_length: 2, hash_ids: [1] }),
    ].join("\n");
    const t = parseMooncakeTrace(text);
    expect(t.lines).toBe(12);
    expect(t.requests.length).toBe(2);
    expect(t.errors.map((e) => e.line)).toEqual([2, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    const msg = (n: number) => t.errors.find((e) => e.line === n)!.message;
    expect(msg(2)).toStartWith("invalid JSON");
    expect(msg(4)).toBe("missing field output_length");
    expect(msg(5)).toBe("input_length must not be negative, got -4");
    expect(msg(6)).toBe("output_length must not be negative, got -1");
    expect(msg(7)).toBe("input_length 513 is longer than its 1 hash ids allow at --trace-block-size 512 (at most 512 tokens)");
    expect(msg(8)).toContain("timestamp must be a number of ms ≥ 0");
    expect(msg(9)).toContain("hash_ids[1] must be an integer");
    expect(msg(10)).toContain("expected a JSON object");
    expect(msg(11)).toContain("input_length must be an integer");
    expect(msg(12)).toBe("input_length must be at least 1, got 0");
  });

  test("the trace block size decides what input lengths are possible", () => {
    const l = line({ timestamp: 0, input_length: 100, output_length: 1, hash_ids: [1, 2] });
    expect(parseMooncakeTrace(l, 64).errors).toEqual([]);
    expect(parseMooncakeTrace(l, 32).errors[0]!.message).toContain("at most 64 tokens");
  });
});
