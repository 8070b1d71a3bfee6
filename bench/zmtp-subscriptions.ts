// A publisher's per-subscriber work against the number of prefixes that subscriber holds: match a
// topic, cancel and re-add one prefix, in ns per operation, with 1, 1,000 and 100,000 prefixes
// held. The trie (src/protocol/zmtp/subscriptions.ts) beside the list it replaced (a scan per match,
// a re-filter per cancel), run in the same process. Median of BENCH_RUNS (5).
// Run: `npx bun bench/zmtp-subscriptions.ts`.
import { SubscriptionSet } from "../src/protocol/zmtp/subscriptions.ts";
import { machineLine } from "./lib/machine.ts";
import { envNumber } from "./lib/measure.ts";

const RUNS = envNumber("BENCH_RUNS", 5);
const te = new TextEncoder();
const latin1 = new TextDecoder("latin1");
const pad = (i: number) => String(i).padStart(6, "0"); // every prefix the same length, whatever N
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

type Subscriptions = Pick<SubscriptionSet, "add" | "remove" | "matches">;

/** The former publisher-side set: a list scanned per match, re-filtered (and decoded) per cancel. */
class ListSet implements Subscriptions {
  private counts = new Map<string, number>();
  private prefixes: Uint8Array[] = [];
  add(p: Uint8Array): boolean {
    const k = latin1.decode(p);
    const n = this.counts.get(k) ?? 0;
    this.counts.set(k, n + 1);
    if (n === 0) this.prefixes.push(p.slice());
    return n === 0;
  }
  remove(p: Uint8Array): boolean {
    const k = latin1.decode(p);
    const n = this.counts.get(k);
    if (n === undefined) return false;
    if (n > 1) return (this.counts.set(k, n - 1), false);
    this.counts.delete(k);
    this.prefixes = this.prefixes.filter((x) => latin1.decode(x) !== k);
    return true;
  }
  matches(t: Uint8Array | undefined): boolean {
    if (t === undefined) return false;
    outer: for (const p of this.prefixes) {
      if (p.length > t.length) continue;
      for (let j = 0; j < p.length; j++) if (p[j] !== t[j]) continue outer;
      return true;
    }
    return false;
  }
}

function once(make: () => Subscriptions, held: number, ops: number): { match: number; churn: number } {
  const set = make();
  for (let i = 0; i < held; i++) set.add(te.encode(`kv@worker-${pad(i)}@`));
  const topic = te.encode(`kv@worker-${pad(held - 1)}@rank-0`);
  const miss = te.encode("other-topic");
  let hits = 0;
  let t = performance.now();
  for (let i = 0; i < ops; i++) hits += set.matches(i & 1 ? topic : miss) ? 1 : 0;
  const match = ((performance.now() - t) * 1e6) / ops;
  if (hits !== ops / 2) throw new Error(`matched ${hits} of ${ops / 2}`);
  const prefix = te.encode(`kv@worker-${pad(held >> 1)}@`);
  t = performance.now();
  for (let i = 0; i < ops; i++) (set.remove(prefix), set.add(prefix));
  const churn = ((performance.now() - t) * 1e6) / ops;
  return { match, churn };
}

const fmt = (ns: number) => (ns >= 10_000 ? `${(ns / 1000).toFixed(0)} µs` : `${ns.toFixed(0)} ns`);
console.log(`per operation, one subscriber holding N prefixes (median of ${RUNS}): trie | former list`);
for (const held of [1, 1_000, 100_000]) {
  const trie = Array.from({ length: RUNS }, () => once(() => new SubscriptionSet(), held, 200_000));
  const list = Array.from({ length: RUNS }, () => once(() => new ListSet(), held, Math.max(20, Math.min(200_000, 2e8 / held / 50))));
  const [tm, tc, lm, lc] = [trie.map((r) => r.match), trie.map((r) => r.churn), list.map((r) => r.match), list.map((r) => r.churn)].map(median) as [number, number, number, number];
  console.log(`  N = ${held.toLocaleString("en")}: match ${fmt(tm)} | ${fmt(lm)} (${(lm / tm).toFixed(1)}×); cancel + re-subscribe ${fmt(tc)} | ${fmt(lc)} (${(lc / tc).toFixed(1)}×)`);
}
console.log(machineLine());
