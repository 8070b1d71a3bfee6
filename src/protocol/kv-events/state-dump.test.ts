// The state dump's seq header and URL, against literals.
import { describe, expect, test } from "bun:test";
import { parseDumpSeq, stateDumpUrl } from "./state-dump.ts";

describe("parseDumpSeq", () => {
  test("-1, 0 and decimal numbers up to 2^53 without leading zeros", () => {
    expect(parseDumpSeq("-1")).toBe(-1);
    expect(parseDumpSeq("0")).toBe(0);
    expect(parseDumpSeq("9")).toBe(9);
    expect(parseDumpSeq("1234567890123456")).toBe(1234567890123456);
  });

  test("a missing header, a leading zero, 17 digits or a value past 2^53 is a problem", () => {
    expect(parseDumpSeq(null)).toBe("missing x-kvcr-raw-seq header");
    expect(parseDumpSeq("01")).toBe('bad x-kvcr-raw-seq header "01"');
    expect(parseDumpSeq("-2")).toBe('bad x-kvcr-raw-seq header "-2"');
    expect(parseDumpSeq("12345678901234567")).toBe('bad x-kvcr-raw-seq header "12345678901234567"');
    expect(parseDumpSeq("9999999999999999")).toBe("x-kvcr-raw-seq 9999999999999999 is beyond 2^53");
  });
});

describe("stateDumpUrl", () => {
  test("the mocker's base URL (a trailing slash dropped), the dump path, worker and rank", () => {
    expect(stateDumpUrl("http://h:1/", 2, 3)).toBe("http://h:1/v1/kv-dump?worker=2&dp_rank=3");
    expect(stateDumpUrl("http://h:1", 0, 0)).toBe("http://h:1/v1/kv-dump?worker=0&dp_rank=0");
  });
});
