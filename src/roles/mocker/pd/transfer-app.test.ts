// The transfer endpoint's meet route: a decode leg's room answered once its prefill holds the KV
// (the KV then released to it), refused when the prefill ended without it, timed out when no
// prefill came; bad bodies and a process without rooms named.
import { describe, expect, test } from "bun:test";
import { createLogger } from "../../../lib/logger.ts";
import { BootstrapRooms } from "./bootstrap-rooms.ts";
import { HeldTransfers } from "./held-transfers.ts";
import { createTransferFetch } from "./transfer-app.ts";
import { TransferStats } from "./transfer-stats.ts";
import { MEET_PATH } from "./transfer-wire.ts";

const logger = createLogger({ level: "error" });
const held = () => new HeldTransfers(1000, new TransferStats("prefill", () => 0), logger);
const meet = (fetch: (r: Request) => Promise<Response>, body: unknown) => fetch(new Request(`http://x${MEET_PATH}`, { method: "POST", body: JSON.stringify(body) }));

describe("POST /v1/kv_transfer/meet", () => {
  test("a room held before or after the decode asks: 200 with its prompt length, the KV released once", async () => {
    const rooms = new BootstrapRooms(1000, 1000);
    const fetch = createTransferFetch(held(), rooms);
    let released = 0;
    rooms.complete(7n, 96, () => released++);
    const early = await meet(fetch, { bootstrap_room: "7" });
    expect([early.status, await early.json(), released]).toEqual([200, { prompt_tokens: 96 }, 1]);
    const waiting = meet(fetch, { bootstrap_room: "18446744073709551615" });
    rooms.complete(18446744073709551615n, 64, () => released++);
    const late = await waiting;
    expect([late.status, await late.json(), released]).toEqual([200, { prompt_tokens: 64 }, 2]);
    rooms.close();
  });

  test("a prefill that ended without its KV is a 409; no prefill within the wait a 504", async () => {
    const rooms = new BootstrapRooms(30, 1000);
    const fetch = createTransferFetch(held(), rooms);
    rooms.abort(3n);
    const aborted = await meet(fetch, { bootstrap_room: "3" });
    expect(aborted.status).toBe(409);
    expect(((await aborted.json()) as { error: { message: string } }).error.message).toContain("the prefill of room 3 ended without its KV");
    const late = await meet(fetch, { bootstrap_room: "4" });
    expect(late.status).toBe(504);
    expect(((await late.json()) as { error: { message: string } }).error.message).toBe("no prefill of room 4 held its KV in time");
    rooms.close();
  });

  test("bad bodies and a process without rooms are named", async () => {
    const fetch = createTransferFetch(held(), new BootstrapRooms(30, 30));
    for (const body of [{}, { bootstrap_room: 5 }, { bootstrap_room: "-1" }, { bootstrap_room: "18446744073709551616" }, []]) {
      const res = await meet(fetch, body);
      expect(res.status).toBe(400);
    }
    expect(((await (await meet(fetch, { bootstrap_room: 5 })).json()) as { error: { message: string } }).error.message).toBe("bootstrap_room: expected a u64 as decimal digits");
    const none = await meet(createTransferFetch(held()), { bootstrap_room: "1" });
    expect(none.status).toBe(404);
    expect((await fetch(new Request(`http://x${MEET_PATH}`))).status).toBe(405);
    expect(((await (await fetch(new Request("http://x/nope", { method: "POST" }))).json()) as { error: { message: string } }).error.message).toContain(`POST ${MEET_PATH}`);
  });
});
