// Shared set-up for the agent tests: resolved agent configs from flags, a router-event consumer that
// joins late (snapshot, then the stream from cursor + 1), and snapshot/engine comparisons.
import { agentOptions, agentProblems, type AgentConfig } from "../../src/config/agent.ts";
import { commonOptions } from "../../src/config/common.ts";
import { loadConfig } from "../../src/config/load.ts";
import type { AgentSnapshot } from "../../src/protocol/agent-snapshot.ts";
import { decodeRouterEvents } from "../../src/protocol/router-events.ts";
import { decodeSeq } from "../../src/protocol/seq-frame.ts";
import { SubSocket } from "../../src/transport/zmtp/index.ts";
import { waitFor } from "../harness.ts";
import { logger } from "./mocker-kit.ts";

/** The config `kvcr-mock agent ARGV` would run with. */
export function agentConfig(argv: string[]): AgentConfig {
  return loadConfig({ ...agentOptions, ...commonOptions }, { argv }, (c) => agentProblems(c as AgentConfig)).config as AgentConfig;
}

export type TierSets = { device: Set<string>; host: Set<string>; disk: Set<string> };

/** Per source: tier → set of seq hashes (decimal), from a snapshot. */
export function snapshotSets(s: AgentSnapshot): Map<string, TierSets> {
  const out = new Map<string, TierSets>();
  for (const src of s.sources) {
    out.set(src.cache_owner_id, {
      device: new Set(src.tiers.device.map((b) => b.seq_hash)),
      host: new Set(src.tiers.host.map((b) => b.seq_hash)),
      disk: new Set(src.tiers.disk.map((b) => b.seq_hash)),
    });
  }
  return out;
}

export async function getSnapshot(httpUrl: string): Promise<AgentSnapshot> {
  return (await (await fetch(`${httpUrl}/v1/snapshot`)).json()) as AgentSnapshot;
}

/**
 * A router that joins late: subscribes, loads the snapshot (cursor N), applies buffered and later
 * batches with cursor > N. `state` is what it believes each source holds.
 */
export class LateRouter implements AsyncDisposable {
  readonly state = new Map<string, TierSets>();
  lastCursor = 0;
  gaps = 0;
  private readonly sub = new SubSocket({ logger });
  private buffered: { cursor: number; payload: Uint8Array }[] | undefined = [];

  constructor(eventsEndpoint: string) {
    this.sub.onMessage((frames) => {
      const cursor = Number(decodeSeq(frames[1]!));
      if (this.buffered) this.buffered.push({ cursor, payload: frames[2]! });
      else this.apply(cursor, frames[2]!);
    });
    this.sub.subscribe("");
    this.sub.connect(eventsEndpoint);
  }

  async join(httpUrl: string): Promise<void> {
    await this.sub.connected();
    const snap = await getSnapshot(httpUrl);
    for (const [k, v] of snapshotSets(snap)) this.state.set(k, v);
    this.lastCursor = snap.cursor;
    const held = this.buffered!;
    this.buffered = undefined;
    for (const b of held) this.apply(b.cursor, b.payload);
  }

  private apply(cursor: number, payload: Uint8Array): void {
    if (cursor <= this.lastCursor) return;
    if (cursor !== this.lastCursor + 1) this.gaps++;
    this.lastCursor = cursor;
    for (const e of decodeRouterEvents(payload)) {
      const id = "cacheOwnerId" in e.holder ? e.holder.cacheOwnerId : `${e.holder.workerId}/${e.holder.dpRank}`;
      let sets = this.state.get(id);
      if (!sets) this.state.set(id, (sets = { device: new Set(), host: new Set(), disk: new Set() }));
      const set = sets[e.tier];
      if (e.kind === "cleared") set.clear();
      else for (const b of e.blocks) e.kind === "stored" ? set.add(b.seqHash.toString()) : set.delete(b.seqHash.toString());
    }
  }

  /** Waits until the stream caught up with `cursor`. */
  async caughtUp(cursor: number): Promise<void> {
    await waitFor(() => this.lastCursor >= cursor, { timeoutMs: 15_000, what: `router stream at cursor ${cursor} (at ${this.lastCursor})` });
  }

  /** Non-empty sources only (a cleared source and an absent one are the same state). */
  nonEmpty(): Map<string, TierSets> {
    return new Map([...this.state].filter(([, s]) => s.device.size + s.host.size + s.disk.size > 0));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.sub.close();
  }
}

export function nonEmptySets(m: Map<string, TierSets>): Map<string, TierSets> {
  return new Map([...m].filter(([, s]) => s.device.size + s.host.size + s.disk.size > 0));
}

/** Runs one generate request to completion on the mocker. */
export async function generate(mockerUrl: string, worker: number, dpRank: number, tokenIds: number[], maxTokens = 4): Promise<void> {
  const res = await fetch(`${mockerUrl}/v1/generate`, { method: "POST", body: JSON.stringify({ worker, dp_rank: dpRank, token_ids: tokenIds, max_tokens: maxTokens }) });
  if (!res.ok) throw new Error(`generate: ${res.status} ${await res.text()}`);
  await res.text();
}
