import { describe, expect, test } from "bun:test";
import { saveResult } from "./save-result.ts";

function files() {
  const written: Record<string, string> = {};
  return {
    written,
    deps: {
      readFile: (p: string) => {
        if (!(p in written)) throw new Error("ENOENT");
        return written[p]!;
      },
      write: (p: string, t: string) => void (written[p] = t),
    },
  };
}

const name = { backend: "openai", requestRate: 4 as const, model: "org/m" };

describe("--save-result / --append-result", () => {
  test("--result-filename under --result-dir, one compact document; vLLM's name without a filename", () => {
    const f = files();
    expect(saveResult({ dir: "out/", filename: "r.json", append: false }, { completed: 1 }, name, f.deps)).toBe("out/r.json");
    expect(f.written["out/r.json"]).toBe('{"completed":1}');
    expect(saveResult({ append: false }, {}, name, f.deps)).toMatch(/^openai-4\.0qps-m-\d{8}-\d{6}\.json$/);
  });

  test("appending adds one document per line; saving replaces", () => {
    const f = files();
    const o = { filename: "r.json", append: true };
    saveResult(o, { run: 1 }, name, f.deps);
    saveResult(o, { run: 2 }, name, f.deps);
    expect(f.written["r.json"]!.split("\n").map((l) => JSON.parse(l))).toEqual([{ run: 1 }, { run: 2 }]);
    saveResult({ ...o, append: false }, { run: 3 }, name, f.deps);
    expect(f.written["r.json"]).toBe('{"run":3}');
  });
});
