import { describe, expect, test } from "bun:test";
import { closestName, editDistance } from "./closest-name.ts";

const COMMANDS = ["agent", "bench", "events", "frontend", "mocker", "replay", "up"];
const FLAGS = ["num-workers", "prefix-tokens", "suffix-tokens", "max-concurrency", "num-prompts", "block-size", "mocker-processes", "router-mode"];

describe("closestName", () => {
  test("a typo of a command or flag names it", () => {
    expect(closestName("bnech", COMMANDS)).toBe("bench");
    expect(closestName("mokcer", COMMANDS)).toBe("mocker");
    expect(closestName("event", COMMANDS)).toBe("events");
    expect(closestName("frontent", COMMANDS)).toBe("frontend");
    expect(closestName("max-concurency", FLAGS)).toBe("max-concurrency");
    expect(closestName("num-prompt", FLAGS)).toBe("num-prompts");
    expect(closestName("blok-sise", FLAGS)).toBe("block-size");
  });

  test("a unique start of a name names it; a shared start does not", () => {
    expect(closestName("max-conc", FLAGS)).toBe("max-concurrency");
    expect(closestName("mocker-p", FLAGS)).toBe("mocker-processes");
    expect(closestName("num-", FLAGS)).toBeUndefined(); // num-workers and num-prompts
    expect(closestName("ben", COMMANDS)).toBeUndefined(); // too short to be a start
  });

  test("an unrelated word gets no suggestion, however least-bad one name is", () => {
    expect(closestName("prefill-workers", FLAGS)).toBeUndefined();
    expect(closestName("toString", COMMANDS)).toBeUndefined();
    expect(closestName("constructor", COMMANDS)).toBeUndefined();
    expect(closestName("xyz", COMMANDS)).toBeUndefined();
    expect(closestName("serve", COMMANDS)).toBeUndefined();
  });

  test("editDistance counts a transposition once", () => {
    expect(editDistance("bnech", "bench")).toBe(1);
    expect(editDistance("abc", "abc")).toBe(0);
    expect(editDistance("", "abc")).toBe(3);
    expect(editDistance("kitten", "sitting")).toBe(3);
  });
});
