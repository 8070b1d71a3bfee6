// A RankPublisher read by real libzmq (zeromq.js under Node, spawned): a libzmq SUB receives the
// raw stream and every batch decodes as vLLM's; a libzmq DEALER replays byte-identical payloads.
import { expect, test } from "bun:test";
import type { KvEvent } from "../../src/core/kv/kv-events.ts";
import { createLogger } from "../../src/lib/logger.ts";
import { decodeBatch, decodeSeq, encodeSeq, REPLAY_END_SEQ, type BlockStored } from "../../src/protocol/kv-events/index.ts";
import { RankPublisher } from "../../src/roles/mocker/rank-publisher.ts";
import { cleanupList, waitFor } from "../harness.ts";
import { bytesSpec, text, ZmqPeer, type FrameReport } from "./zmq-peer-client.ts";

const logger = createLogger({ level: "silent" });
const cleanups = cleanupList();
const bytes = (f: FrameReport): Uint8Array => {
  if (!("b64" in f)) throw new Error(`frame of ${f.size} bytes was reported by digest only`);
  return new Uint8Array(Buffer.from(f.b64, "base64"));
};

test("libzmq reads our publisher: live batches decodable with contiguous seqs, and replayed byte for byte", async () => {
  const peer = await ZmqPeer.start();
  cleanups.push(() => peer.kill());
  const topic = "kvcr-feedfacecafebeef";
  const pub = new RankPublisher({ host: "127.0.0.1", port: 0, replayPort: 0, topic, dataParallelRank: 2, kvcrOwnsHost: true, logger });
  cleanups.push(() => pub.close());

  await peer.socket("sub", "sub");
  await peer.subscribe("sub", text(topic));
  await peer.connect("sub", pub.endpoint);
  await waitFor(() => pub.subscriberCount() >= 1, { timeoutMs: 10_000, what: "libzmq's subscription to reach our PUB" });

  const steps: KvEvent[][] = [
    [{ kind: "stored", tier: "device", parentHash: null, blockHashes: [1n << 63n, 2n], localHashes: [3n, 4n], tokenIds: new Uint32Array([1, 2, 3, 4]), blockSize: 2 }],
    [{ kind: "stored", tier: "host", parentHash: 1n << 63n, blockHashes: [2n], localHashes: [4n], tokenIds: new Uint32Array([3, 4]), blockSize: 2 }],
    [{ kind: "removed", tier: "device", blockHashes: [2n] }],
  ];
  for (const [i, s] of steps.entries()) pub.publish(s, 1_700_000_000 + i);

  const live: Uint8Array[] = [];
  for (let i = 0; i < steps.length; i++) {
    const m = await peer.nextMessage("sub");
    expect(m.length).toBe(3);
    expect(new TextDecoder().decode(bytes(m[0]!))).toBe(topic);
    expect(decodeSeq(bytes(m[1]!))).toBe(BigInt(i));
    live.push(bytes(m[2]!));
  }
  const batches = live.map(decodeBatch);
  expect(batches.map((b) => [b.ts, b.dataParallelRank])).toEqual([[1_700_000_000, 2], [1_700_000_001, 2], [1_700_000_002, 2]]);
  const [g1, g2] = [batches[0]!.events[0] as BlockStored, batches[1]!.events[0] as BlockStored];
  expect([g1.medium, g1.ownership, g1.blockHashes, g1.tokenIds]).toEqual(["GPU", undefined, [1n << 63n, 2n], [1, 2, 3, 4]]);
  expect([g2.medium, g2.ownership, g2.parentBlockHash, g2.tokenIds]).toEqual(["CPU_PINNED", "kvcr", 1n << 63n, [3, 4]]);

  await peer.socket("dealer", "dealer");
  await peer.connect("dealer", pub.replayEndpoint!);
  await peer.send("dealer", [text(""), bytesSpec(encodeSeq(1n))]);
  const replayed: FrameReport[][] = [];
  for (;;) {
    const m = await peer.nextMessage("dealer");
    replayed.push(m);
    if (decodeSeq(bytes(m[2]!)) === REPLAY_END_SEQ) break;
  }
  expect(replayed.map((m) => decodeSeq(bytes(m[2]!)))).toEqual([1n, 2n, REPLAY_END_SEQ]);
  expect(replayed.slice(0, 2).map((m) => bytes(m[3]!))).toEqual([live[1]!, live[2]!]);
  expect(replayed.map((m) => bytes(m[0]!).length)).toEqual([0, 0, 0]);
  expect(bytes(replayed[2]![3]!).length).toBe(0);
});
