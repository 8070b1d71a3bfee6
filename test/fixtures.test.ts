// The vectors in test/fixtures and the traces in traces/ are the shared ones, byte for byte: their
// checksums hold (pinned here, so a clean clone checks them too), and where the project's
// ../shared folder is present they equal it.
import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { FIXTURES_DIR, REPO_ROOT } from "./harness.ts";

const SHARED = join(REPO_ROOT, "../shared");
const sha256 = (path: string) => new Bun.CryptoHasher("sha256").update(readFileSync(path)).digest("hex");

/** The shared vector files' SHA-256: changing a vector means changing it here too, on purpose. */
const VECTORS: Record<string, string> = {
  "vectors.json": "6e1b67dedb436cd623918d09b5f651d31fefe0e13d4f87e66c23d325aee9e903",
  "lora-vectors.json": "274c4ad2c5118eb855be405c88d243e0cd2608cec5b688ab6265102e71e035b6",
};

test("traces match their SHA256SUMS", () => {
  const sums = readFileSync(join(REPO_ROOT, "traces/SHA256SUMS"), "utf8").trim().split("\n");
  expect(sums.length).toBe(2);
  for (const line of sums) {
    const [sum, name] = line.split(/\s+/);
    expect(`${name} ${sha256(join(REPO_ROOT, "traces", name!))}`).toBe(`${name} ${sum}`);
  }
});

test.each(Object.keys(VECTORS))("test/fixtures/%s matches its pinned SHA-256", (name) => {
  expect(sha256(join(FIXTURES_DIR, name))).toBe(VECTORS[name]!);
});

test.if(existsSync(join(SHARED, "fixtures")))("the vector files equal ../shared/fixtures's", () => {
  for (const name of Object.keys(VECTORS)) expect(readFileSync(join(FIXTURES_DIR, name))).toEqual(readFileSync(join(SHARED, "fixtures", name)));
});
