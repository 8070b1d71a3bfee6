// The committed src/lib/xxh3-wasm-bytes.ts is what wasm/xxh3.ts compiles to (`npm run build:wasm`
// after changing the AssemblyScript source), so the binary never carries a stale build.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { renderWasmModule, WASM_MODULE } from "../scripts/lib/wasm-module.ts";

test("src/lib/xxh3-wasm-bytes.ts is the build of wasm/xxh3.ts (run npm run build:wasm)", async () => {
  expect(readFileSync(WASM_MODULE, "utf8")).toBe(await renderWasmModule());
}, 60_000);
