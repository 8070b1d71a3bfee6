import { describe, expect, test } from "bun:test";
import { createLogger } from "../../../lib/logger.ts";
import { waitFor } from "../../../../test/harness.ts";
import { HeldTransfers } from "./held-transfers.ts";
import { createTransferFetch } from "./transfer-app.ts";
import { TransferStats } from "./transfer-stats.ts";
import { DONE_PATH, PULL_PATH } from "./transfer-wire.ts";

const logger = createLogger({ level: "silent" });

function setup(timeoutMs: number) {
  const released: string[] = [];
  const engine = { releaseHeld: (id: string) => (released.push(id), true) };
  let held!: HeldTransfers;
  const stats = new TransferStats("prefill", () => held.blocks);
  held = new HeldTransfers(timeoutMs, stats, logger);
  return { held, stats, engine, released };
}

const post = (fetch: (r: Request) => Promise<Response>, path: string, body: unknown) =>
  fetch(new Request(`http://x${path}`, { method: "POST", body: typeof body === "string" ? body : JSON.stringify(body) }));

describe("held transfers (prefill side)", () => {
  test("a pull is answered only for held blocks of the named engine; done frees them once", () => {
    const { held, stats, engine, released } = setup(60_000);
    held.hold(engine, "w_dp0", "r1", [7, 8, 9]);
    expect(held.blocks).toBe(3);
    expect(held.pull("w_dp0", "r1", [8, 9])).toEqual({ ok: true, blocks: 2 });
    expect(held.pull("w_dp1", "r1", [8])).toMatchObject({ ok: false, status: 404 });
    expect(held.pull("w_dp0", "r2", [8])).toMatchObject({ ok: false, status: 404 });
    expect(held.pull("w_dp0", "r1", [8, 10])).toEqual({ ok: false, status: 400, message: "remote_block_ids: block 10 is not one request r1 holds" });
    expect(held.done("w_dp1", "r1")).toBe(false);
    expect(held.done("w_dp0", "r1")).toBe(true);
    expect(held.done("w_dp0", "r1")).toBe(false);
    expect([released, held.blocks, stats.pulledHolds, stats.holdTimeouts]).toEqual([["r1"], 0, 1, 0]);
    held.close();
  });

  test("an unpulled hold is freed at the timeout and counted; a pull after it is a 404", async () => {
    const { held, stats, engine, released } = setup(30);
    held.hold(engine, "w_dp0", "r1", [1]);
    await waitFor(() => stats.holdTimeouts === 1, { timeoutMs: 5000, what: "the hold timeout" });
    expect([released, held.blocks]).toEqual([["r1"], 0]);
    expect(held.pull("w_dp0", "r1", [1])).toMatchObject({ ok: false, status: 404 });
    const m = stats.families().find((f) => f.name === "kvcr_mocker_kv_hold_timeouts_total")!;
    expect(m.samples).toEqual([{ labels: { disaggregation_mode: "prefill" }, value: 1 }]);
  });

  test("the endpoint: pull, done, and bodies it cannot use", async () => {
    const { held, engine } = setup(60_000);
    const fetch = createTransferFetch(held);
    held.hold(engine, "w_dp0", "r1", [4, 5]);
    const ok = await post(fetch, PULL_PATH, { remote_engine_id: "w_dp0", remote_request_id: "r1", remote_block_ids: [5] });
    expect([ok.status, await ok.json()]).toEqual([200, { blocks: 1 }]);
    const bad = await post(fetch, PULL_PATH, { remote_engine_id: "w_dp0", remote_request_id: "r1", remote_block_ids: ["5"] });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toContain("remote_block_ids");
    expect((await post(fetch, PULL_PATH, "{")).status).toBe(400);
    expect((await post(fetch, "/elsewhere", {})).status).toBe(404);
    expect((await fetch(new Request(`http://x${PULL_PATH}`))).status).toBe(405);
    expect((await post(fetch, DONE_PATH, { remote_engine_id: "w_dp0", remote_request_id: "r1" })).status).toBe(204);
    expect((await post(fetch, DONE_PATH, { remote_engine_id: "w_dp0", remote_request_id: "r1" })).status).toBe(404);
    held.close();
  });
});
