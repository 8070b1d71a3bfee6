import { describe, expect, test } from "bun:test";
import { defineOptions, group } from "../config/options.ts";
import { defineRoleCommand } from "./define-command.ts";
import { helpStyleFor, renderHelp, wrap } from "./help.ts";
import { COMMANDS } from "./root.ts";

const options = defineOptions({
  numWorkers: { kind: "int", min: 1, default: 1, description: "Workers in this process" },
  hostOffloadD2hBandwidthGbps: { kind: "number", min: 0, default: 0, description: "Device-to-host copy bandwidth in GB/s; 0 = instant transfers between the tiers" },
  enablePrefixCaching: { kind: "bool", default: true, description: "Reuse cached prefix blocks" },
  namespace: { kind: "string", default: "dynamo", env: "DYN_NAMESPACE", description: "Discovery namespace" },
});
const cmd = defineRoleCommand({ name: "demo", description: "A demo command whose description is long enough to need wrapping at forty columns", options, run: async () => {} });
const widest = (text: string) => Math.max(...text.split("\n").map((l) => l.length));

describe("--help text", () => {
  for (const width of [40, 60, 80, 120]) {
    test(`fits ${width} columns`, async () => {
      const text = await renderHelp(cmd, undefined, { width, color: false });
      // A word wider than the terminal (a long flag or variable name) cannot be broken; all else fits.
      const over = text.split("\n").filter((l) => l.length > width);
      expect(over.filter((l) => /\S\s+\S/.test(l.trim()))).toEqual([]);
      expect(text).toContain("--host-offload-d2h-bandwidth-gbps");
      expect(text).toContain("--no-enable-prefix-caching");
    });
  }

  test("a wide terminal keeps one line per option", async () => {
    const text = await renderHelp(cmd, undefined, { width: 200, color: false });
    expect(text).toMatch(/--num-workers=<int> +Workers in this process \(default 1; env KVCR_NUM_WORKERS\)/);
    expect(widest(text)).toBeLessThanOrEqual(200);
  });

  test("every option names its environment variables, the alias after KVCR_*", async () => {
    const text = (await renderHelp(cmd, undefined, { width: 300, color: false })).replace(/\s+/g, " ");
    expect(text).toContain("env KVCR_HOST_OFFLOAD_D2H_BANDWIDTH_GBPS");
    expect(text).toContain("env KVCR_NAMESPACE or DYN_NAMESPACE");
    expect(text).toContain("env KVCR_LOG_LEVEL");
  });

  test("ANSI colour only when asked for", async () => {
    expect(await renderHelp(cmd, undefined, { width: 80, color: false })).not.toContain("\x1b[");
    expect(await renderHelp(cmd, undefined, { width: 80, color: true })).toContain("\x1b[36m--num-workers");
  });
});

describe("--help topics", () => {
  const shared = group("Engine", defineOptions({ blockSize: { kind: "int", default: 64, description: "Tokens per KV block" } }));
  const topics = defineOptions({
    ...group("Workers", { numWorkers: { kind: "int", min: 1, default: 1, description: "Workers in this process" } }),
    ...shared,
    ...group("Workers", { staggerDelay: { kind: "number", default: 0, description: "Seconds between worker starts" } }),
    ...group("Workers and engine", { seed: shared.blockSize }),
    plain: { kind: "string", description: "An option without a topic" },
  });
  const topicCmd = defineRoleCommand({ name: "demo", description: "demo", options: topics, run: async () => {} });

  test("a heading per topic, in the order the topics first appear, each option under its own", async () => {
    const text = await renderHelp(topicCmd, undefined, { width: 100, color: false });
    const headings = text.split("\n").filter((l) => /^[A-Z][A-Z /]+$/.test(l));
    expect(headings).toEqual(["WORKERS", "ENGINE", "WORKERS AND ENGINE", "OPTIONS", "LOGGING/CONFIG"]);
    const section = (heading: string) => text.split(`\n${heading}\n\n`)[1]!.split("\n\n")[0]!;
    expect(section("WORKERS")).toContain("--num-workers");
    expect(section("WORKERS")).toContain("--stagger-delay");
    expect(section("ENGINE")).toContain("--block-size");
    expect(section("WORKERS AND ENGINE")).toContain("--seed");
    expect(section("OPTIONS")).toContain("--plain");
    expect(section("LOGGING/CONFIG")).toContain("--log-level");
  });

  test("one flag column for every topic", async () => {
    const text = await renderHelp(topicCmd, undefined, { width: 120, color: false });
    // Where each option's description starts: the same column under every heading.
    const starts = text.split("\n").flatMap((l) => {
      const m = /^ {2}(--\S+)( +)\S/.exec(l);
      return m ? [2 + m[1]!.length + m[2]!.length] : [];
    });
    expect(starts.length).toBeGreaterThan(5);
    expect(new Set(starts).size).toBe(1);
  });

  test("headings are bold only with colour", async () => {
    expect(await renderHelp(topicCmd, undefined, { width: 80, color: true })).toContain("\x1b[1mWORKERS\x1b[22m");
    expect(await renderHelp(topicCmd, undefined, { width: 80, color: false })).toContain("\nWORKERS\n");
  });

  test("every option of every command has a topic", async () => {
    const untitled: string[] = [];
    for (const [name, load] of Object.entries(COMMANDS)) {
      for (const [flag, def] of Object.entries((await load()).flags)) if (!def.group) untitled.push(`${name} --${flag}`);
    }
    expect(untitled).toEqual([]);
  });
});

describe("helpStyleFor", () => {
  const tty = { isTTY: true, columns: 132 };
  const pipe = { isTTY: false };
  test("colour on a terminal only, never with NO_COLOR or TERM=dumb", () => {
    expect(helpStyleFor(tty, {}).color).toBe(true);
    expect(helpStyleFor(pipe, {}).color).toBe(false);
    expect(helpStyleFor(tty, { NO_COLOR: "1" }).color).toBe(false);
    expect(helpStyleFor(tty, { TERM: "dumb" }).color).toBe(false);
    // no-color.org: an empty NO_COLOR does not count.
    expect(helpStyleFor(tty, { NO_COLOR: "" }).color).toBe(true);
  });

  test("the width is COLUMNS, else the terminal's, else 80, and never below 40", () => {
    expect(helpStyleFor(tty, { COLUMNS: "80" }).width).toBe(80);
    expect(helpStyleFor(tty, {}).width).toBe(132);
    expect(helpStyleFor(pipe, {}).width).toBe(80);
    expect(helpStyleFor(pipe, { COLUMNS: "abc" }).width).toBe(80);
    expect(helpStyleFor(pipe, { COLUMNS: "10" }).width).toBe(40);
  });
});

test("wrap keeps words whole and within the width", () => {
  expect(wrap("aa bb cc dd", 5)).toEqual(["aa bb", "cc dd"]);
  expect(wrap("averyveryverylongword x", 5)).toEqual(["averyveryverylongword", "x"]);
  expect(wrap("", 10)).toEqual([""]);
});
