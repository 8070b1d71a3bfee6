import { describe, expect, test } from "bun:test";
import { compareTargetOptions, compareTargetProblems, compareUrlsText, parseCompareStacks, parseCompareUrls, parseNamedSides } from "./bench-compare-targets.ts";

const FILE = import.meta.path; // a file that exists

describe("named comparison sides", () => {
  test("NAME=VALUE pairs in order; names of letters, digits, . _ -; at least two; each once", () => {
    const any = () => true;
    expect(parseNamedSides("a=1,b.c_d-e=2, 9=3 ", "--f", "V", any)).toEqual([["a", "1"], ["b.c_d-e", "2"], ["9", "3"]]);
    expect(parseNamedSides("a=x=y,b=", "--f", "V", any)).toEqual([["a", "x=y"], ["b", ""]]);
    expect(parseNamedSides("a=1", "--f", "V", any)).toEqual(["--f: got one side (a), expected at least two to compare"]);
    expect(parseNamedSides("a=1,a=2", "--f", "V", any)).toEqual(["--f: the name a is given twice; each side needs its own"]);
    expect(parseNamedSides("a=1,-b=2,c", "--f", "V", any)).toEqual(['--f: got "-b=2", expected NAME=V (NAME of letters, digits, . _ -)', '--f: got "c", expected NAME=V (NAME of letters, digits, . _ -)']);
    expect(parseNamedSides("a=1,b=2", "--f", "V", (v) => v === "1")).toEqual(['--f: got "b=2", expected NAME=V (NAME of letters, digits, . _ -)']);
    expect(parseNamedSides("a=1,abc", "--f", "V", any)).toEqual(['--f: got "abc", expected NAME=V (NAME of letters, digits, . _ -)']);
    expect(parseNamedSides("", "--f", "V", any)).toEqual(['--f: got "", expected NAME=V (NAME of letters, digits, . _ -)']);
  });

  test("--compare-urls takes http(s) URLs; --url-per-mode is it without --compare-router-modes; --compare-stacks takes files", () => {
    expect(parseCompareUrls({ compareUrls: "a=http://x:1,b=https://y/v1" })).toEqual([["a", "http://x:1"], ["b", "https://y/v1"]]);
    expect(compareUrlsText({ urlPerMode: "a=http://x:1,b=http://y:2" })).toEqual({ text: "a=http://x:1,b=http://y:2", flag: "--url-per-mode" });
    expect(compareUrlsText({ urlPerMode: "kv=http://x:1", compareRouterModes: "kv" })).toBeUndefined();
    expect(compareUrlsText({ compareUrls: "a=http://x:1", urlPerMode: "b=http://y:1" })).toEqual({ text: "a=http://x:1", flag: "--compare-urls" });
    expect(parseCompareUrls({})).toBeUndefined();
    expect(parseCompareStacks({ compareStacks: `a=${FILE},b=${FILE}` })).toEqual([["a", FILE], ["b", FILE]]);
    expect(parseCompareStacks({})).toBeUndefined();
    expect(compareTargetProblems({ compareUrls: "a=ftp://x,b=http://y:1" }, false)).toEqual(['--compare-urls: got "a=ftp://x", expected NAME=URL (NAME of letters, digits, . _ -)']);
    expect(compareTargetProblems({ compareStacks: "a=,b=x" }, false)[0]).toBe('--compare-stacks: got "a=", expected NAME=FILE (NAME of letters, digits, . _ -)');
    expect(compareTargetOptions.compareUrls.nonEmpty && compareTargetOptions.compareStacks.nonEmpty).toBe(true);
  });

  test("what each refuses beside it, one problem per flag", () => {
    const stacks = `a=${FILE},b=${FILE}`;
    expect(compareTargetProblems({ compareStacks: stacks }, false)).toEqual([]);
    expect(compareTargetProblems({ compareUrls: "a=http://x:1,b=http://y:1" }, false)).toEqual([]);
    expect(compareTargetProblems({ compareStacks: stacks, compareLayouts: "agg,disagg" }, false)).toEqual(["--compare-stacks and --compare-layouts: each side's stack file says it all; compare one thing at a time (drop --compare-layouts)"]);
    expect(compareTargetProblems({ compareStacks: stacks, sweepConcurrency: [1, 2] }, false)).toEqual(["--compare-stacks and --sweep-concurrency: each side's stack file says it all; compare one thing at a time (drop --sweep-concurrency)"]);
    expect(compareTargetProblems({ compareStacks: stacks, urlPerMode: "a=http://x:1,b=http://y:1" }, false)).toEqual(["--compare-stacks and --url-per-mode: each side's stack file says it all; compare one thing at a time (drop --url-per-mode)"]);
    expect(compareTargetProblems({ compareUrls: "a=http://x:1,b=http://y:1", compareLayouts: "agg,disagg" }, false)).toEqual(["--compare-urls and --compare-layouts: compare one thing at a time"]);
    expect(compareTargetProblems({ compareUrls: "a=http://x:1,b=http://y:1", withReplay: true }, false)).toEqual(["--with-replay: compares one live run with its simulation; drop --compare-urls"]);
    expect(compareTargetProblems({ compareStacks: stacks, withReplay: true }, false)).toEqual(["--with-replay: compares one live run with its simulation; drop --compare-stacks"]);
    expect(compareTargetProblems({ withReplay: true }, true)).toEqual([]);
  });
});
