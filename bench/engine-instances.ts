// Many engines in one process (the live mocker's case): construction time and resident memory
// per idle default engine (16,384 G1 blocks), then one request through each, then engines
// whose G1 prefix cache is full.
// Run: npx bun bench/engine-instances.ts [engines=2000]
import { MockEngine } from "../src/core/engine/mock-engine.ts";
import { createBlockHasher } from "../src/lib/xxh3.ts";

const n = Number(process.argv[2] ?? 2000);
const hasher = createBlockHasher();
Bun.gc(true);
const rss0 = process.memoryUsage().rss;
const t0 = performance.now();
const engines = Array.from({ length: n }, () => new MockEngine({}, { hasher }));
const t1 = performance.now();
Bun.gc(true);
const rss1 = process.memoryUsage().rss;
console.log(`${n} default engines: ${(t1 - t0).toFixed(0)} ms to build, ${((rss1 - rss0) / n / 1024).toFixed(0)} KiB RSS each (idle)`);
const prompt = Uint32Array.from({ length: 1024 }, (_, i) => i);
const t2 = performance.now();
let steps = 0;
for (let i = 0; i < n; i++) {
  const e = engines[i]!;
  e.addRequest({ id: "r", tokenIds: prompt, maxTokens: 64 });
  for (let now = 0; e.pendingRequests > 0; steps++) now += e.step(now).durationMs;
}
const t3 = performance.now();
Bun.gc(true);
const rss2 = process.memoryUsage().rss;
console.log(`one 1,024-token / 64-output request through each: ${steps} steps, ${(((t3 - t2) * 1000) / steps).toFixed(2)} µs per step, ${((rss2 - rss0) / n / 1024).toFixed(0)} KiB RSS each after`);

// Engines whose G1 prefix cache is full (16,384 distinct cached blocks each): the steady state of
// a long-running mocker. Block size 16 keeps the prompts that fill it short.
engines.length = 0;
Bun.gc(true);
const fullN = 40;
const rss3 = process.memoryUsage().rss;
const full: MockEngine[] = [];
for (let k = 0; k < fullN; k++) {
  const e = new MockEngine({ blockSize: 16, numGpuBlocks: 16_384 }, { hasher });
  for (let q = 0; q < 40; q++) {
    const p = Uint32Array.from({ length: 16 * 410 }, (_, i) => k * 1e6 + q * 1e4 + i);
    e.addRequest({ id: `r${q}`, tokenIds: p, maxTokens: 1 });
    for (let now = 0; e.pendingRequests > 0; ) now += e.step(now).durationMs;
  }
  full.push(e);
}
Bun.gc(true);
console.log(`${fullN} engines with a full G1 cache (${full[0]!.metrics().gpuCachedBlocks} cached blocks each): ${((process.memoryUsage().rss - rss3) / fullN / 1024).toFixed(0)} KiB RSS each`);
