import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { probeWritable } from "./probe-writable.ts";

const dir = mkdtempSync(join(tmpdir(), "kvcr-probe-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("probeWritable", () => {
  test("a new file in a writable folder passes and is not left behind", () => {
    const p = join(dir, "new.json");
    probeWritable(p);
    expect(existsSync(p)).toBe(false);
  });

  test("an existing file passes untouched", () => {
    const p = join(dir, "old.json");
    writeFileSync(p, "previous report");
    probeWritable(p);
    expect(readFileSync(p, "utf8")).toBe("previous report");
  });

  test("a missing folder or a directory path throws the OS error", () => {
    expect(() => probeWritable(join(dir, "no/such/dir/r.json"))).toThrow(/ENOENT/);
    expect(() => probeWritable(dir)).toThrow(/EISDIR/);
  });
});
