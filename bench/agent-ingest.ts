// State-agent ingest throughput (target ≥ 1 M ops/s, docs/PERFORMANCE.md): block store/remove
// operations applied per second on one core from pre-encoded raw vLLM batches (map encoding, as
// vLLM sends them), through the agent's real path: decode, fault check, normalization (local hash
// from token ids, router hash chained from the parent; random raw hashes, not block-hash.ts's) and
// slot state; once with router events only collected, once also encoded as outbound batches (one
// per 64 raw batches).
// Workload per slot: 256 steps, each storing 16 new chained blocks (one BlockStored) and evicting
// the blocks stored 8 steps earlier (one BlockRemoved per block, as vLLM emits them); a last batch
// evicts the rest, so the cycle repeats with consistent state. 64 slots, interleaved.
// Run: `npx bun bench/agent-ingest.ts` (BLOCK_SIZE=64 default; BENCH_ROUND_MS, BENCH_ROUNDS).
import { createBlockHasher } from "../src/lib/xxh3.ts";
import { encodeBatch, type VllmKvEvent } from "../src/protocol/kv-events/index.ts";
import { encodeRouterEvents, type RouterEvent } from "../src/protocol/router-events.ts";
import { decodeRaw } from "../src/roles/agent/slot.ts";
import { batchFault, SlotResidency } from "../src/roles/agent/slot-residency.ts";
import { envNumber } from "./lib/measure.ts";

const BLOCK_SIZE = envNumber("BLOCK_SIZE", 64);
const SLOTS = envNumber("SLOTS", 64);
const STEPS = 256;
const BLOCKS_PER_STEP = 16;
const RESIDENT_STEPS = 8;
const TICK_BATCHES = 64;

let rng = 0x9e3779b9;
const rand32 = () => {
  rng ^= rng << 13;
  rng ^= rng >>> 17;
  rng ^= rng << 5;
  return rng >>> 0;
};
const randomHash = () => (BigInt(rand32()) << 32n) | BigInt(rand32());

/** One slot's cycle of raw payloads and the block ops it carries. */
function slotCycle(): { payloads: Uint8Array[]; blockOps: number } {
  const payloads: Uint8Array[] = [];
  const raw: bigint[][] = [];
  let ops = 0;
  let ts = 1_700_000_000;
  for (let s = 0; s <= STEPS; s++) {
    const events: VllmKvEvent[] = [];
    if (s < STEPS) {
      const hashes = Array.from({ length: BLOCKS_PER_STEP }, randomHash);
      const parent = s === 0 ? null : raw[s - 1]![BLOCKS_PER_STEP - 1]!;
      const tokenIds = Array.from({ length: BLOCKS_PER_STEP * BLOCK_SIZE }, () => rand32() % 151_936);
      raw.push(hashes);
      events.push({ type: "BlockStored", blockHashes: hashes, parentBlockHash: parent, tokenIds, blockSize: BLOCK_SIZE, loraId: null, medium: "GPU", loraName: null });
      ops += BLOCKS_PER_STEP;
    }
    const evict = s < STEPS ? (s >= RESIDENT_STEPS ? [s - RESIDENT_STEPS] : []) : Array.from({ length: RESIDENT_STEPS }, (_, k) => STEPS - RESIDENT_STEPS + k);
    for (const e of evict) for (const h of raw[e]!) events.push({ type: "BlockRemoved", blockHashes: [h], medium: "GPU" });
    ops += evict.length * BLOCKS_PER_STEP;
    payloads.push(encodeBatch({ ts: (ts += 0.01), events, dataParallelRank: 0 }));
  }
  return { payloads, blockOps: ops };
}

const cycles = Array.from({ length: SLOTS }, slotCycle);
const bytes = cycles.reduce((a, c) => a + c.payloads.reduce((b, p) => b + p.length, 0), 0);
const opsPerRound = cycles.reduce((a, c) => a + c.blockOps, 0);
const batchesPerRound = SLOTS * (STEPS + 1);

function ingestCase(encodeOutbound: boolean) {
  let pending: RouterEvent[] = [];
  const hasher = createBlockHasher();
  const slots = cycles.map((_, i) => new SlotResidency({ cacheOwnerId: `owner-${i}` }, hasher, (e) => pending.push(e)));
  let step = 0;
  let applied = 0;
  // One op = one raw batch of every slot at the current step (slots interleaved, as live traffic).
  return {
    run: () => {
      const s = step;
      step = (step + 1) % (STEPS + 1);
      for (let i = 0; i < SLOTS; i++) {
        const batch = decodeRaw(cycles[i]!.payloads[s]!);
        if (typeof batch === "string") throw new Error(batch);
        if (batchFault(batch, 0) !== undefined) throw new Error("unexpected fault");
        slots[i]!.applyBatch(batch);
        if (++applied % TICK_BATCHES === 0) {
          if (encodeOutbound) encodeRouterEvents(pending);
          pending = [];
        }
      }
      return pending.length;
    },
    check: () => slots.reduce((a, s) => a + s.counters.orphanStores + s.counters.unknownRemovals + s.counters.malformedEvents, 0),
  };
}

// Each round runs whole cycles of every slot; reported: the median round by wall clock, and by this
// process's CPU time (user + system), which on a shared machine is the per-core figure.
const ROUNDS = envNumber("BENCH_ROUNDS", 5);
const CYCLES = envNumber("BENCH_CYCLES", 2);
function rounds(c: ReturnType<typeof ingestCase>): { wall: number; cpu: number } {
  for (let s = 0; s <= STEPS; s++) c.run(); // warm-up: one cycle
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    for (let k = 0; k < CYCLES * (STEPS + 1); k++) c.run();
    const dc = process.cpuUsage(c0);
    wall.push((opsPerRound * CYCLES * 1000) / (performance.now() - t0));
    cpu.push((opsPerRound * CYCLES * 1e6) / (dc.user + dc.system));
  }
  const median = (a: number[]) => a.sort((x, y) => x - y)[a.length >> 1]!;
  return { wall: median(wall), cpu: median(cpu) };
}

const cases = [
  ["ingest (decode + normalize + slot state)", ingestCase(false)],
  ["ingest + outbound router-event encoding", ingestCase(true)],
] as const;
console.log(`agent ingest: ${SLOTS} slots, block size ${BLOCK_SIZE}, ${BLOCKS_PER_STEP} blocks stored per step, removals one block per event`);
console.log(`  ${batchesPerRound} raw batches per cycle, ${(bytes / batchesPerRound / 1024).toFixed(1)} KiB average payload, ${opsPerRound} block ops per cycle`);
for (const [name, c] of cases) {
  const r = rounds(c);
  if (c.check() !== 0) throw new Error("workload produced orphans, malformed events or unknown removals: bench is broken");
  console.log(`  ${name.padEnd(44)} ${(r.wall / 1e6).toFixed(2)} M block ops/s (wall), ${(r.cpu / 1e6).toFixed(2)} M per CPU-second`);
}
