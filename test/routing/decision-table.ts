// One table of routing decisions run against both users of src/core/routing: the core router as
// `replay` drives it (src/core/routing/router.test.ts) and the frontend fed over its router-event
// path (src/roles/frontend/routing.test.ts). Same index state → same (worker, rank).
import type { RouterTier } from "../../src/protocol/router-events.ts";

export const TABLE_BLOCK_SIZE = 4;

export interface Holding {
  worker: number;
  rank: number;
  tier: RouterTier;
  /** Blocks [from, to) of the case's prompt. */
  from: number;
  to: number;
}

export interface RoutingCase {
  name: string;
  workers: number;
  ranks: number;
  holdings: Holding[];
  /** Prompt length in full blocks (tokens = blocks × TABLE_BLOCK_SIZE). */
  promptBlocks: number;
  expect: { worker: number; rank: number };
}

export const ROUTING_CASES: RoutingCase[] = [
  {
    name: "the device prefix holder wins",
    workers: 3, ranks: 1, promptBlocks: 6,
    holdings: [{ worker: 1, rank: 0, tier: "device", from: 0, to: 4 }, { worker: 2, rank: 0, tier: "device", from: 0, to: 2 }],
    expect: { worker: 1, rank: 0 },
  },
  {
    name: "a host-tier holder beats a cold worker",
    workers: 2, ranks: 1, promptBlocks: 4,
    holdings: [{ worker: 0, rank: 0, tier: "host", from: 0, to: 4 }],
    expect: { worker: 0, rank: 0 },
  },
  {
    name: "device 1 + host 3 (cost 0.75) beats device 3 (cost 1)",
    workers: 2, ranks: 1, promptBlocks: 4,
    holdings: [
      { worker: 0, rank: 0, tier: "device", from: 0, to: 1 },
      { worker: 0, rank: 0, tier: "host", from: 1, to: 4 },
      { worker: 1, rank: 0, tier: "device", from: 0, to: 3 },
    ],
    expect: { worker: 0, rank: 0 },
  },
  {
    name: "disk continuation counts at 0.25 after host",
    workers: 2, ranks: 1, promptBlocks: 4,
    holdings: [
      { worker: 0, rank: 0, tier: "device", from: 0, to: 2 },
      { worker: 1, rank: 0, tier: "device", from: 0, to: 2 },
      { worker: 1, rank: 0, tier: "disk", from: 2, to: 4 },
    ],
    expect: { worker: 1, rank: 0 },
  },
  {
    name: "ranks are candidates of their own: rank 2 of worker 1",
    workers: 2, ranks: 3, promptBlocks: 5,
    holdings: [{ worker: 1, rank: 2, tier: "device", from: 0, to: 5 }, { worker: 0, rank: 1, tier: "device", from: 0, to: 3 }],
    expect: { worker: 1, rank: 2 },
  },
];
