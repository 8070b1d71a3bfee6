import { expect, test } from "bun:test";
import { encodeBatch, encodeSeq } from "../../protocol/kv-events/index.ts";
import { createLogger } from "../../lib/logger.ts";
import { PubSocket } from "../../transport/zmtp/index.ts";
import { waitFor, withTimeout } from "../../../test/harness.ts";
import { start } from "./start.ts";

const logger = createLogger({ level: "silent" });

test("events role: ready once subscribed, one JSON line per batch, close() lets go of the publisher", async () => {
  using pub = new PubSocket({ logger });
  const endpoint = pub.bind("tcp://127.0.0.1:0");
  const out: string[] = [];
  const role = await start({ endpoint, topic: "", replay: undefined, fromSeq: undefined, replayTimeoutMs: 5000 }, { logger, out: { write: (t: string) => out.push(t) } });
  try {
    await withTimeout(role.ready, 5000, "role ready");
    expect(role.ports).toEqual({});
    await waitFor(() => pub.subscriberCount() === 1, { timeoutMs: 5000, what: "the subscription" });
    pub.send([new Uint8Array(0), encodeSeq(0n), encodeBatch({ ts: 2, events: [{ type: "AllBlocksCleared" }], dataParallelRank: null })]);
    await waitFor(() => out.length === 1, { timeoutMs: 5000, what: "the JSON line" });
    expect(JSON.parse(out[0]!)).toEqual({ seq: 0, topic: "", ts: 2, data_parallel_rank: null, events: [{ type: "AllBlocksCleared" }] });
  } finally {
    await role.close();
    await role.close(); // safe twice
  }
  await waitFor(() => pub.peerCount === 0, { timeoutMs: 5000, what: "the tap to disconnect" });
});

test("events role: an out-of-range --from-seq that skipped validation rejects start(), nothing opened", async () => {
  using pub = new PubSocket({ logger });
  const endpoint = pub.bind("tcp://127.0.0.1:0");
  const config = { endpoint, topic: "", replay: endpoint, fromSeq: "99999999999999999999", replayTimeoutMs: 5000 };
  await expect(start(config, { logger, out: { write: () => {} } })).rejects.toThrow("--from-seq: got \"99999999999999999999\", expected a decimal integer from 0 to 18446744073709551615");
});
