import { describe, expect, test } from "bun:test";
import { ChunkSizeLine } from "./http1-chunk-size.ts";

const feed = (line: ChunkSizeLine, text: string) => [...text].map((ch) => line.take(ch.charCodeAt(0))).find((p) => p !== undefined);

describe("a chunk-size line", () => {
  test("hex digits in either case; extensions and whitespace after them ignored", () => {
    const line = new ChunkSizeLine();
    expect(feed(line, "1aF ;name=\"x y\"")).toBeUndefined();
    expect(line.ended()).toBeUndefined();
    expect(line.size).toBe(0x1af);
    line.reset();
    expect(feed(line, "0")).toBeUndefined();
    expect([line.size, line.ended()]).toEqual([0, undefined]);
  });

  test("every decimal digit is a hex digit, ':' (after '9') is not", () => {
    const line = new ChunkSizeLine();
    expect(feed(line, "09")).toBeUndefined();
    expect(line.size).toBe(9);
    line.reset();
    expect(feed(line, "1234567890")).toBeUndefined();
    expect(line.size).toBe(0x1234567890);
    expect(feed(new ChunkSizeLine(), "1:")).toBe('bad chunk size: unexpected ":"');
  });

  test("each bad line names its problem", () => {
    expect(feed(new ChunkSizeLine(), "1g")).toBe('bad chunk size: unexpected "g"');
    expect(feed(new ChunkSizeLine(), "1".repeat(13))).toBe("bad chunk size: more than 12 hex digits");
    const empty = new ChunkSizeLine();
    expect(feed(empty, ";ext")).toBeUndefined();
    expect(empty.ended()).toBe("bad chunk size: an empty chunk-size line");
  });
});
