// The built-in timing profiles against the database they came from, and what they cost replay.
// 1. Table error: for each built-in, 40 seeded points off the grid (prefill: 1–8,192 new tokens
//    after 0–32,768 computed ones; decode: batch 1–256 at context 128–32,768), each asked of
//    AIConfigurator (scripts/peers/aic_timing_profiles.py query) and of kvcr-mock's bilinear tables;
//    prints the mean and largest |error| in % per table.
// 2. Replay speed: the whole Mooncake conversation trace (12,031 requests, 4 workers) with the
//    polynomial and with builtin:qwen3-8b-h200-vllm0.24-tp1, simulated requests per wall second,
//    the median of `rounds` fresh processes, sides alternated, and the profile's ratio.
// Needs the peers environment. Run: bun bench/timing-profiles.ts [rounds=3]
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findPeersPython, PEERS_HINT } from "../scripts/lib/peers.ts";
import { BUILTIN_TIMING_PROFILES, loadTimingProfile } from "../src/config/timing-profile.ts";
import type { TablesProfile } from "../src/protocol/timing-profile.ts";
import { ProfileTimer } from "../src/core/timing/profile-timer.ts";
import { CLI, ROOT, roundsArg, TRACE } from "./lib/dynamo-sides.ts";
import { machineLine } from "./lib/machine.ts";
import { median } from "./lib/router-scenarios.ts";

const rounds = roundsArg(1);
const python = findPeersPython();
if (python === undefined) throw new Error(`no peers environment: ${PEERS_HINT}`);
const QUERY = join(ROOT, "scripts/peers/aic_timing_profiles.py");
const POINTS = 40;

/** Seeded uniform integers in [lo, hi] on a log scale (the tables' axes are). */
function logInts(seed: number, n: number, lo: number, hi: number): number[] {
  let s = seed >>> 0;
  const next = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
  return Array.from({ length: n }, () => Math.round(Math.exp(Math.log(lo) + next() * (Math.log(hi) - Math.log(lo)))));
}

function errors(ours: number[], theirs: number[]): { mean: number; max: number } {
  const e = ours.map((v, i) => Math.abs(v - theirs[i]!) / theirs[i]! * 100);
  return { mean: e.reduce((a, b) => a + b, 0) / e.length, max: Math.max(...e) };
}

console.log(machineLine());
console.log("\nTable error against AIConfigurator off the grid (|kvcr-mock − AIC| / AIC, %):");
console.log("profile                              prefill mean  max   decode mean  max");
for (const builtin of BUILTIN_TIMING_PROFILES) {
  const name = builtin.slice("builtin:".length);
  const prefill = logInts(1, POINTS, 1, 8192).map((t, i) => [t, i % 4 === 0 ? 0 : logInts(2, POINTS, 16, 32768)[i]!]);
  const decode = logInts(3, POINTS, 1, 256).map((b, i) => [b, logInts(4, POINTS, 128, 32768)[i]!]);
  const r = Bun.spawnSync([python, QUERY, "query"], { stdin: new TextEncoder().encode(JSON.stringify({ name, prefill, decode })), stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`AIConfigurator query for ${name} exited ${r.exitCode}:\n${r.stderr.toString().slice(-2000)}`);
  const aic = JSON.parse(r.stdout.toString()) as { prefill: number[]; decode: number[] };
  const timer = new ProfileTimer(loadTimingProfile(builtin) as TablesProfile, { extrapolate: false });
  const p = errors(prefill.map(([t, c]) => timer.prefillMs(t!, c!)), aic.prefill);
  const d = errors(decode.map(([b, c]) => timer.decodeMs(b!, b! * c!)), aic.decode);
  console.log(`${name.padEnd(36)} ${p.mean.toFixed(1).padStart(8)} ${p.max.toFixed(1).padStart(6)} ${d.mean.toFixed(1).padStart(10)} ${d.max.toFixed(1).padStart(6)}`);
}

const dir = mkdtempSync(join(tmpdir(), "kvcr-bench-timing-profiles-"));
try {
  const sides = { polynomial: [] as string[], profile: ["--timing-profile", "builtin:qwen3-8b-h200-vllm0.24-tp1"] };
  const rps: Record<keyof typeof sides, number[]> = { polynomial: [], profile: [] };
  for (let round = 0; round < rounds; round++) {
    const order = (round % 2 === 0 ? ["polynomial", "profile"] : ["profile", "polynomial"]) as (keyof typeof sides)[];
    for (const side of order) {
      const out = join(dir, `${side}.json`);
      // Fixed G1 and KV sizes on both sides: only the step-time model differs.
      const argv = [process.execPath, CLI, "replay", "--trace", TRACE, "--num-workers", "4", "--num-gpu-blocks-override", "16384", "--kv-bytes-per-token", "131072", ...sides[side], "--output-json", out, "--log-level", "warn"];
      const r = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
      if (r.exitCode !== 0) throw new Error(`replay (${side}) exited ${r.exitCode}: ${argv.join(" ")}\n${r.stderr.toString().slice(-2000)}`);
      const report = JSON.parse(readFileSync(out, "utf8")) as { completed: number; wall_time_s: number };
      rps[side].push(report.completed / report.wall_time_s);
    }
  }
  const poly = median(rps.polynomial);
  const prof = median(rps.profile);
  console.log(`\nReplay, full conversation trace (median of ${rounds}, simulated requests per wall second):`);
  console.log(`  polynomial ${poly.toFixed(0)}   profile ${prof.toFixed(0)}   profile / polynomial ${(prof / poly).toFixed(2)}× (rounds: ${rps.profile.map((v, i) => (v / rps.polynomial[i]!).toFixed(2)).join(", ")})`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
