// A whole mocker attacked through its raw KV-event PUB by a subscriber written byte by byte: the
// attacker is dropped and counted on /metrics, /health answers meanwhile, and a well-behaved
// subscriber still gets every batch of the requests served after the attack.
import { describe, expect, test } from "bun:test";
import { decodeSeq } from "../../src/protocol/kv-events/index.ts";
import { startMocker } from "../../src/roles/mocker/index.ts";
import { SubSocket } from "../../src/transport/zmtp/index.ts";
import { command, hostileSub, join } from "../hostile-zmtp.ts";
import { makeTempDir, waitFor, withTimeout } from "../harness.ts";
import { logger, mockerConfig } from "./mocker-kit.ts";

const te = new TextEncoder();

describe("a hostile subscriber on a mocker's raw PUB", () => {
  test("100,000 SUBSCRIBEs and 1,500 CANCELs: dropped, counted, the stream and /health unharmed", async () => {
    await using dir = await makeTempDir("kvcr-hostile-");
    const config = mockerConfig(["--num-workers", "1", "--block-size", "4", "--speedup-ratio", "0", "--zmq-kv-events-ports", "0", "--discovery-dir", dir.path, "--http-port", "0"]);
    await using mocker = await startMocker(config, { logger, env: {} });
    const endpoint = `tcp://127.0.0.1:${mocker.endpoints[0]!.rawPorts[0]}`;
    const sub = new SubSocket({ logger });
    try {
      sub.subscribe("");
      sub.connect(endpoint);
      await waitFor(() => mocker.outlets[0]!.publishers[0]!.subscriberCount() === 1, { timeoutMs: 5000, what: "the subscriber" });
      {
        using raw = await hostileSub(endpoint);
        raw.send(join([...Array.from({ length: 100_000 }, (_, i) => command("SUBSCRIBE", te.encode(`t${i}`))), ...Array.from({ length: 1_500 }, (_, i) => command("CANCEL", te.encode(`t${i}`)))]));
        const health = await fetch(`${mocker.httpUrl}/health`);
        expect(health.status).toBe(200);
        await waitFor(raw.isClosed, { timeoutMs: 5000, what: "the attacker to be dropped" });
      }
      const metrics = await (await fetch(`${mocker.httpUrl}/metrics`)).text();
      expect(metrics).toMatch(/^kvcr_mocker_raw_subscribers_dropped_total\{[^}]*\} 1$/m);
      const res = await fetch(`${mocker.httpUrl}/v1/generate`, { method: "POST", body: JSON.stringify({ worker: 0, token_ids: [1, 2, 3, 4, 5, 6, 7, 8, 9], max_tokens: 2 }) });
      expect(res.status).toBe(200);
      await res.text();
      const first = await withTimeout(sub.receive(), 5000, "a batch after the attack");
      expect(decodeSeq(first[1]!)).toBe(0n);
    } finally {
      sub.close();
    }
  });
});
