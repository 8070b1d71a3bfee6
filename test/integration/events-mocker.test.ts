// The events tap against a real mocker (in this process): a generate request makes the worker
// publish; the tap prints it live, and a second tap replays it from the worker's replay ROUTER.
import { expect, test } from "bun:test";
import { loadConfig } from "../../src/config/load.ts";
import { mockerOptions, mockerProblems } from "../../src/config/mocker.ts";
import { createLogger } from "../../src/lib/logger.ts";
import { startMocker } from "../../src/roles/mocker/index.ts";
import { cleanupList, tempDir, waitFor, withTimeout } from "../harness.ts";
import { spawnTap } from "./events-tap.ts";

const cleanups = cleanupList();
/** A tap on the worker; returns its printed lines (parsed) as they come. */
function tap(args: string[]) {
  const t = spawnTap(args);
  cleanups.push(() => t[Symbol.asyncDispose]());
  return t.lines;
}

test("events shows a mocker worker's live stream, and its replay", async () => {
  const dir = tempDir("kvcr-events-");
  cleanups.push(() => dir[Symbol.dispose]());
  const { config } = loadConfig(mockerOptions, { argv: ["--discovery-dir", dir.path, "--speedup-ratio", "0", "--zmq-kv-events-ports", "0", "--zmq-replay-ports", "0"], env: {} }, mockerProblems);
  const mocker = await startMocker(config, { logger: createLogger({ level: "silent" }), env: {} });
  cleanups.push(() => mocker.close());
  await withTimeout(mocker.ready, 10_000, "the mocker");
  const { rawPorts, replayPorts } = mocker.endpoints[0]!;
  const live = `tcp://127.0.0.1:${rawPorts[0]}`;
  const replay = `tcp://127.0.0.1:${replayPorts![0]}`;

  const liveLines = tap(["--endpoint", live]);
  // Generate until the tap has a batch: a batch published before its SUB joined is not seen live.
  let attempt = 0;
  await waitFor(
    async () => {
      // A fresh prompt each time: a cached prefix would store no new blocks.
      const prompt = Array.from({ length: 64 }, (_, i) => 1000 + attempt * 100 + i);
      attempt++;
      const res = await fetch(`${mocker.httpUrl}/v1/generate`, { method: "POST", body: JSON.stringify({ worker: 0, token_ids: prompt, max_tokens: 1 }) });
      expect(res.status).toBe(200);
      await res.text();
      return liveLines.some((l) => Array.isArray(l.events));
    },
    { timeoutMs: 10_000, intervalMs: 50, what: "a live batch on the tap" },
  );
  const first = liveLines.find((l) => Array.isArray(l.events))!;
  expect(first).toMatchObject({ topic: "", data_parallel_rank: 0 });
  const stored = (first.events as { type: string; token_ids?: number[]; block_hashes: string[] }[]).find((e) => e.type === "BlockStored")!;
  expect(stored.token_ids!.length).toBe(64);
  expect(stored.block_hashes.every((h) => /^\d+$/.test(h))).toBe(true);

  // A second tap replays from seq 0 and then follows live: the same first batch, byte for byte.
  const replayLines = tap(["--endpoint", live, "--replay", replay, "--from-seq", "0"]);
  await waitFor(() => replayLines.some((l) => l.seq === first.seq), { timeoutMs: 10_000, what: "the replayed batch" });
  expect(replayLines.find((l) => l.seq === first.seq)).toEqual(first);
  const seqs = replayLines.filter((l) => "seq" in l && !("error" in l)).map((l) => l.seq);
  expect(new Set(seqs).size).toBe(seqs.length);
});
