// Rebuilds src/lib/xxh3-wasm-bytes.ts from wasm/xxh3.ts (after changing the AssemblyScript source).
import { renderWasmModule, WASM_MODULE } from "./lib/wasm-module.ts";

try {
  await Bun.write(WASM_MODULE, await renderWasmModule());
} catch (err) {
  console.error((err as Error).message);
  process.exit(1);
}
console.log(`wrote ${WASM_MODULE}`);
