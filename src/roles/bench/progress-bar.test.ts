import { describe, expect, test } from "bun:test";
import { progressBar } from "./progress-bar.ts";

const stream = (isTTY: boolean) => {
  const out: string[] = [];
  const s = { isTTY, columns: 100, write: (t: string) => (out.push(t), true), cursorTo: () => true, clearLine: () => true, moveCursor: () => true, on: () => s, removeListener: () => s };
  return { s: s as unknown as NodeJS.WriteStream, out };
};

describe("bench progress bar", () => {
  test("none when the output is not a terminal", () => {
    expect(progressBar(stream(false).s)).toBeUndefined();
  });

  test("drawn on a terminal with the run's label and counts", () => {
    const t = stream(true);
    const bar = progressBar(t.s)!("kv", 10);
    bar.update(4);
    bar.stop();
    expect(t.out.join("")).toContain("kv [");
    expect(t.out.join("")).toContain("4/10 requests");
  });

  test("a run whose count is not known in advance (--duration) shows the count so far, no bound", () => {
    const t = stream(true);
    const bar = progressBar(t.s)!("bench", 0);
    bar.update(7);
    bar.stop();
    expect(t.out.join("")).toContain("bench 7 requests");
    expect(t.out.join("")).not.toMatch(/\/\d+ requests/);
  });
});
