// A decode worker's edge, in a mocker started in this process against a prefill endpoint of the
// test's own that holds its answer: the rest of the worker keeps serving meanwhile, and the
// request runs once the answer comes.
import { describe, expect, test } from "bun:test";
import { startMocker } from "../../src/roles/mocker/index.ts";
import { serveHttp } from "../../src/transport/http/server.ts";
import { cleanupList, makeTempDir, waitFor, withTimeout } from "../harness.ts";
import { logger, mockerConfig } from "./mocker-kit.ts";

const cleanups = cleanupList();

async function decodeWorker() {
  const dir = await makeTempDir("kvcr-pd-edge-");
  cleanups.push(() => dir[Symbol.asyncDispose]());
  const m = await startMocker(mockerConfig(["--disaggregation-mode", "decode", "--block-size", "4", "--num-gpu-blocks-override", "64", "--speedup-ratio", "0", "--discovery-dir", dir.path]), { logger, env: {} });
  cleanups.push(() => m.close());
  await withTimeout(m.ready, 10_000, "mocker registration");
  return m;
}

/** A prefill endpoint that holds every pull until `answer()`. */
function heldPrefill() {
  let pulls = 0;
  const waiting: ((r: Response) => void)[] = [];
  const server = serveHttp({ host: "127.0.0.1", port: 0, fetch: () => new Promise<Response>((resolve) => (pulls++, waiting.push(resolve))) });
  cleanups.push(() => server.stop(true));
  return { port: server.port, pulls: () => pulls, answer: () => waiting.splice(0).forEach((r) => r(Response.json({ blocks: 2 }))) };
}

const params = (port: number) => ({ do_remote_prefill: true, do_remote_decode: false, remote_engine_id: "p_dp0", remote_request_id: "r1", remote_block_ids: [0, 1], remote_host: "127.0.0.1", remote_port: port });

describe("a decode worker waiting on its prefill worker's answer", () => {
  test("a pull waiting for its answer blocks nobody; the request runs once it comes", async () => {
    const m = await decodeWorker();
    const prefill = heldPrefill();
    const waiting = fetch(`${m.httpUrl}/v1/generate`, { method: "POST", body: JSON.stringify({ worker: 0, token_ids: [1, 2, 3, 4, 5, 6, 7, 8, 9], max_tokens: 3, kv_transfer_params: params(prefill.port) }) });
    await waitFor(() => prefill.pulls() === 1, { timeoutMs: 10_000, what: "the pull reaching the prefill endpoint" });
    const other = await fetch(`${m.httpUrl}/v1/generate`, { method: "POST", body: JSON.stringify({ worker: 0, token_ids: [9, 9, 9], max_tokens: 2 }) });
    expect((await other.text()).trim().split("\n").length).toBe(3);
    expect(m.pool.ranks[0]![0]!.stats.success.length).toBe(1); // the pulling request has not run yet
    prefill.answer();
    const lines = (await (await waiting).text()).trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.at(-1)).toMatchObject({ finish_reason: "length", completion_tokens: 3, cached_tokens: 8 });
  });
});
