// Shared set-up for the worker API tests: a mocker started in this process with every worker's own
// OpenAI API on (port 0), the raw KV events of chosen (worker, rank)s collected, and readers of a
// worker's residency and Prometheus series.
import { decodeBatch, type VllmKvEvent } from "../../src/protocol/kv-events/index.ts";
import type { Residency } from "../../src/protocol/residency.ts";
import { startMocker, type MockerHandle } from "../../src/roles/mocker/index.ts";
import { SubSocket } from "../../src/transport/zmtp/index.ts";
import { makeTempDir, waitFor, withTimeout } from "../harness.ts";
import { logger, mockerConfig } from "./mocker-kit.ts";

/** 2 workers × 2 ranks, block size 4, raw PUBs and the fault API, every worker's API on a free port. */
export async function startWorkers(cleanups: (() => unknown)[], extra: string[] = []): Promise<MockerHandle> {
  const dir = await makeTempDir("kvcr-worker-api-");
  cleanups.push(() => dir[Symbol.asyncDispose]());
  const argv = ["--num-workers", "2", "--data-parallel-size", "2", "--block-size", "4", "--num-gpu-blocks-override", "64", "--openai-port-base", "0"];
  const m = await startMocker(mockerConfig([...argv, "--zmq-kv-events-ports", "0,0", "--admin", "--discovery-dir", dir.path, ...extra]), { logger, env: {} });
  cleanups.push(() => m.close());
  await withTimeout(m.ready, 10_000, "mocker registration");
  return m;
}

export interface RankTap {
  /** Every event received, in order. */
  readonly events: VllmKvEvent[];
  /** Waits until the engines are idle and every batch the rank published since the tap reached it. */
  drained(): Promise<void>;
}

/** The raw KV events of (worker, rank), as our SUB receives them. */
export async function tapRank(m: MockerHandle, worker: number, rank: number, cleanups: (() => unknown)[]): Promise<RankTap> {
  const events: VllmKvEvent[] = [];
  let batches = 0;
  const pub = m.outlets[worker]!.publishers[rank]!;
  const before = pub.subscriberCount();
  const sub = new SubSocket();
  cleanups.push(() => sub.close());
  sub.onMessage((f) => {
    batches++;
    events.push(...decodeBatch(f[2]!).events);
  });
  sub.subscribe(m.workers[worker]!.rawTopic);
  sub.connect(pub.endpoint);
  await waitFor(() => pub.subscriberCount() > before, { timeoutMs: 10_000, what: `a subscription to worker ${worker} rank ${rank}` });
  const from = pub.stats().batchesPublished;
  return {
    events,
    drained: async () => {
      await waitFor(() => m.pool.inFlight === 0 && m.pool.ranks.flat().every((r) => !r.hasWork()), { timeoutMs: 10_000, what: "the engines to finish" });
      await waitFor(() => batches === pub.stats().batchesPublished - from, { timeoutMs: 10_000, what: `worker ${worker} rank ${rank}'s batches at the tap` });
    },
  };
}

export async function residency(m: MockerHandle, worker: number, rank: number): Promise<Residency["sources"][number]> {
  const body = (await (await fetch(`${m.httpUrl}/v1/residency?worker=${worker}&dp_rank=${rank}`)).json()) as Residency;
  return body.sources[0]!;
}

/** A worker API's /metrics as `series → value` (histograms' _bucket/_sum/_count included). */
export async function series(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

export const json = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
