// Event-stream faults of one (worker, rank): what the fault table means for each raw batch its
// publisher is about to send (drop, delay, duplicate, reorder, corrupt, stop) and for its replay
// ROUTER (no_replay). Pure given the table and a random generator. reset_seq and clear_all act once
// when they start: fault-hooks.ts wires them to the publisher and the engine.
import type { BatchFaultPlan, PublishFaults } from "../rank-publisher.ts";
import { EVENT_KINDS, type FaultTable } from "./fault-table.ts";

export function rankEventFaults(table: FaultTable, worker: number, rank: number, random: () => number = Math.random): PublishFaults {
  return {
    plan: () => (table.any(EVENT_KINDS) ? planBatch(table, worker, rank, random) : undefined),
    replayOpen: () => !table.has("no_replay", worker, rank),
  };
}

function planBatch(table: FaultTable, worker: number, rank: number, random: () => number): BatchFaultPlan | undefined {
  // A stopped publisher sends nothing; its batches are still numbered and kept for replay.
  if (table.has("stop_publishing", worker, rank)) return { drop: "gap" };
  const drop = table.find("drop_batches", worker, rank);
  if (drop && random() < drop.spec.share) {
    table.hit(drop);
    return { drop: drop.spec.renumber ? "silent" : "gap" };
  }
  let plan: BatchFaultPlan | undefined;
  const delay = table.find("delay_batches", worker, rank);
  if (delay) {
    table.hit(delay);
    (plan ??= {}).delayMs = delay.spec.ms;
  }
  const dup = table.find("duplicate_batches", worker, rank);
  if (dup && random() < dup.spec.share) {
    table.hit(dup);
    (plan ??= {}).copies = 2;
  }
  const reorder = table.find("reorder_batches", worker, rank);
  if (reorder) {
    table.hit(reorder);
    (plan ??= {}).holdForNext = true;
  }
  const corrupt = table.find("corrupt_payload", worker, rank);
  if (corrupt && random() < corrupt.spec.share) {
    table.hit(corrupt);
    (plan ??= {}).corrupt = true;
  }
  return plan;
}
