// Both sides of Dynamo's KV hand-over over real loopback TCP (the bytes are checked against Dynamo's
// own in protocol/dynamo/bootstrap.test.ts, and against Dynamo's mockers in the peer tests): a decode
// that registers before or after its prefill finishes is handed the KV once and the blocks freed; an
// aborted or late prefill, a decode that breaks the exchange or leaves, are each reported and counted.
import { describe, expect, test } from "bun:test";
import { encodeHandoffFrame, type BootstrapInfo } from "../../../protocol/dynamo/bootstrap.ts";
import { waitFor } from "../../../../test/harness.ts";
import { BootstrapRooms } from "./bootstrap-rooms.ts";
import { meetPrefill } from "./handoff-destination.ts";
import { listenBootstrap, type HandoffStats } from "./handoff-source.ts";

const warnings: string[] = [];
const logger = { debug: () => {}, info: () => {}, warn: (m: string) => void warnings.push(m), error: () => {} } as never;

function source(waitMs = 2_000) {
  const rooms = new BootstrapRooms(waitMs, 60_000);
  const stats: HandoffStats = { handedOver: 0, aborted: 0, timedOut: 0, failed: 0 };
  const listener = listenBootstrap("127.0.0.1", 0, { rooms, stats, logger, timing: { mode: "full_prompt", kvBytesPerToken: 131072, bandwidthGbS: null } });
  const info = (room: bigint): BootstrapInfo => ({ host: "127.0.0.1", port: listener.port, room, handoffId: "5276acbf-b05d-4677-a05f-dee7b80dbf24" });
  return {
    rooms,
    stats,
    info,
    [Symbol.dispose]() {
      listener[Symbol.dispose]();
      rooms.close();
    },
  };
}

const meeting = (info: BootstrapInfo) => ({ info, requestId: "req-1", dpRank: 0, transferableTokens: 32 });

describe("Dynamo's KV hand-over, both sides", () => {
  test("a decode that registers first is handed the KV when the prefill finishes; its blocks are freed once", async () => {
    using s = source();
    let released = 0;
    const met = meetPrefill(meeting(s.info(2n ** 63n + 5n)));
    await waitFor(() => s.rooms.size === 1, { what: "the decode to register", timeoutMs: 5_000 });
    expect(released).toBe(0);
    s.rooms.complete(2n ** 63n + 5n, 40, () => released++);
    expect(await met).toEqual({ ok: true });
    await waitFor(() => s.stats.handedOver === 1, { what: "the hand-over", timeoutMs: 5_000 });
    expect(released).toBe(1);
    expect(s.rooms.size).toBe(0);
  });

  test("a prefill that finished first: the decode arriving later is handed it at once", async () => {
    using s = source();
    let released = 0;
    s.rooms.complete(7n, 40, () => released++);
    expect(await meetPrefill(meeting(s.info(7n)))).toEqual({ ok: true });
    await waitFor(() => released === 1, { what: "the release", timeoutMs: 5_000 });
    expect(s.stats).toEqual({ handedOver: 1, aborted: 0, timedOut: 0, failed: 0 });
  });

  test("an aborted prefill, a prefill past the rendezvous timeout and an unknown source port are reasons, not hangs", async () => {
    using s = source(200);
    s.rooms.abort(8n);
    expect(await meetPrefill(meeting(s.info(8n)))).toEqual({ ok: false, reason: `room 8 at 127.0.0.1:${s.info(8n).port}: the prefill worker closed the connection before the hand-over completed` });
    expect(s.stats.aborted).toBe(1);
    const late = await meetPrefill(meeting(s.info(9n)));
    expect(late.ok).toBe(false);
    expect(s.stats.timedOut).toBe(1);
    // The prefill finishing after its decode gave up: nothing waits, the blocks go at the hold timeout.
    let released = 0;
    s.rooms.complete(9n, 1, () => released++);
    expect(released).toBe(0);
    const nowhere = await meetPrefill({ ...meeting({ ...s.info(1n), port: 1 }) }, 2_000);
    expect(nowhere.ok).toBe(false);
    expect((nowhere as { reason: string }).reason).toStartWith("room 1 at 127.0.0.1:1: ");
  });

  test("the destination's own timeout ends a meeting the source never completes", async () => {
    using s = source(10_000);
    const met = await meetPrefill(meeting(s.info(11n)), 150);
    expect(met).toEqual({ ok: false, reason: `room 11 at 127.0.0.1:${s.info(11n).port}: no hand-over within 150 ms` });
  });

  test("a decode that breaks the exchange or leaves mid-way is counted and its blocks freed; the port keeps serving", async () => {
    using s = source();
    warnings.length = 0;
    const identity = { handoff_id: "5276acbf-b05d-4677-a05f-dee7b80dbf24", bootstrap_room: 12n, request_id: "x" };
    const raw = async (bytes: Uint8Array) => {
      let closed = false;
      const sock = await Bun.connect({ hostname: "127.0.0.1", port: s.info(0n).port, socket: { data: () => {}, close: () => void (closed = true) } });
      sock.write(bytes);
      return { sock, closed: () => closed };
    };
    // Garbage instead of DMHF: refused by name, connection closed.
    const g = await raw(Uint8Array.from(Buffer.from("hello world!")));
    await waitFor(() => g.closed(), { what: "the garbage connection to close", timeoutMs: 5_000 });
    expect(warnings.at(-1)).toContain("hand-over stream does not start with DMHF");
    // A Register from a Source: not a decode.
    const wrongRole = await raw(encodeHandoffFrame({ identity, message: { Register: { role: "Source", dp_rank: 0, order: "SourceFirst", engine_type: "vllm" } } }, true));
    await waitFor(() => wrongRole.closed(), { what: "the wrong-role connection to close", timeoutMs: 5_000 });
    expect(warnings.at(-1)).toContain("expected Register{role: Destination} first, got Register");
    // A decode that registers, is offered the KV, then leaves: the blocks are freed, counted failed.
    let released = 0;
    s.rooms.complete(12n, 3, () => released++);
    const leaver = await raw(encodeHandoffFrame({ identity, message: { Register: { role: "Destination", dp_rank: 0, order: "SourceFirst", engine_type: "vllm" } } }, true));
    leaver.sock.end();
    await waitFor(() => released === 1, { what: "the leaver's blocks to be freed", timeoutMs: 5_000 });
    expect(s.stats.failed).toBe(3);
    expect(s.stats.handedOver).toBe(0);
    // And a proper decode is still served.
    s.rooms.complete(13n, 3, () => {});
    expect(await meetPrefill(meeting(s.info(13n)))).toEqual({ ok: true });
  });
});

describe("rooms", () => {
  test("one decode per room takes the KV; a second registration for it learns of an abort", async () => {
    const rooms = new BootstrapRooms(1_000, 1_000);
    const first = rooms.decodeArrived(1n);
    const second = rooms.decodeArrived(1n);
    let released = 0;
    rooms.complete(1n, 5, () => released++);
    expect(await first).toMatchObject({ kind: "held", promptTokens: 5 });
    expect(await second).toEqual({ kind: "aborted" });
    // Settling twice keeps the first outcome; closing aborts whoever waits.
    rooms.complete(2n, 1, () => {});
    rooms.abort(2n);
    expect(await rooms.decodeArrived(2n)).toMatchObject({ kind: "held" });
    const waiting = rooms.decodeArrived(3n);
    rooms.close();
    expect(await waiting).toEqual({ kind: "aborted" });
    expect(rooms.size).toBe(0);
    expect(released).toBe(0);
  });

  test("a settled room is forgotten once a decode learned it; a decode that gave up leaves no waiter behind for the next one", async () => {
    const rooms = new BootstrapRooms(50, 60_000);
    rooms.complete(5n, 1, () => {});
    expect(rooms.size).toBe(1);
    expect(await rooms.decodeArrived(5n)).toMatchObject({ kind: "held" });
    expect(rooms.size).toBe(0);
    // A decode waits past the rendezvous timeout: it learns nothing, and the room goes with it.
    expect(await rooms.decodeArrived(6n)).toBeUndefined();
    expect(rooms.size).toBe(0);
    // The next decode for the room is the one the prefill's KV goes to.
    const next = rooms.decodeArrived(6n);
    rooms.complete(6n, 2, () => {});
    expect(await next).toMatchObject({ kind: "held", promptTokens: 2 });
    rooms.close();
  });
});
