// The vectors in test/fixtures and the traces in traces/ are the shared ones, byte for byte: their
// checksums hold, and where the project's ../shared folder is present they equal it.
import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { FIXTURES_DIR, REPO_ROOT } from "./harness.ts";

const SHARED = join(REPO_ROOT, "../shared");

test("traces match their SHA256SUMS", () => {
  const sums = readFileSync(join(REPO_ROOT, "traces/SHA256SUMS"), "utf8").trim().split("\n");
  expect(sums.length).toBe(2);
  for (const line of sums) {
    const [sum, name] = line.split(/\s+/);
    const hash = new Bun.CryptoHasher("sha256").update(readFileSync(join(REPO_ROOT, "traces", name!))).digest("hex");
    expect(`${name} ${hash}`).toBe(`${name} ${sum}`);
  }
});

test.if(existsSync(join(SHARED, "fixtures/vectors.json")))("vectors.json equals ../shared/fixtures/vectors.json", () => {
  expect(readFileSync(join(FIXTURES_DIR, "vectors.json"))).toEqual(readFileSync(join(SHARED, "fixtures/vectors.json")));
});
