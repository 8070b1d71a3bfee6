// Dynamo's rendezvous bytes against the capture of Dynamo 1.6.1's own prefill and decode mockers
// handing a request's KV over (test/fixtures/dynamo-1.6.1/disagg-bootstrap.json): every frame read,
// in the captured order, and written again to the same bytes; bad streams refused by name.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { FIXTURES_DIR } from "../../../test/harness.ts";
import { encodeHandoffFrame, HandoffReader, messageName, parseBootstrapInfo, type HandoffFrame } from "./bootstrap.ts";

const capture = JSON.parse(readFileSync(join(FIXTURES_DIR, "dynamo-1.6.1", "disagg-bootstrap.json"), "utf8")) as {
  handoff: { decode_to_prefill: string; prefill_to_decode: string }[];
  requests: { decode: { body: { msgpack: { bootstrap_info: Record<string, unknown> } } }[] };
};
const hex = (h: string) => Uint8Array.from(Buffer.from(h, "hex"));

function readAll(bytes: Uint8Array, hello: boolean, chunk = bytes.length): HandoffFrame[] {
  const r = new HandoffReader(hello);
  const out: HandoffFrame[] = [];
  for (let i = 0; i < bytes.length; i += chunk) {
    const got = r.push(bytes.subarray(i, i + chunk));
    if (!got.ok) throw new Error(got.problem);
    out.push(...got.frames);
  }
  return out;
}

const names = (frames: HandoffFrame[]) =>
  frames.map((f) => {
    const m = f.message as Record<string, Record<string, unknown>>;
    const inner = typeof m === "object" ? m[messageName(m)] : undefined;
    const sub = inner && typeof inner === "object" && !("action_id" in inner) && !("role" in inner) ? `.${messageName("action" in inner ? inner.action : inner)}` : "";
    return `${messageName(m)}${sub}`;
  });

describe("Dynamo's KV hand-over (captured from 1.6.1)", () => {
  test("both directions read as the captured exchange, whole or a byte at a time", () => {
    expect(capture.handoff.length).toBe(2);
    for (const conv of capture.handoff) {
      const d2p = readAll(hex(conv.decode_to_prefill), true);
      const p2d = readAll(hex(conv.prefill_to_decode), false);
      expect(names(d2p)).toEqual(["Register", "ActionAck", "Fact.DestinationReserved", "ActionAck"]);
      expect(names(p2d)).toEqual(["Registered", "Fact.SourceHeld", "Action.ReserveDestination", "Action.ActivateDestination", "Complete"]);
      expect(readAll(hex(conv.decode_to_prefill), true, 1)).toEqual(d2p);
      // One identity for the whole exchange; the room is past 2^53 and read from its digits.
      const ids = [...d2p, ...p2d].map((f) => f.identity);
      for (const id of ids) expect(id).toEqual(ids[0]!);
      expect(typeof ids[0]!.bootstrap_room).toBe("bigint");
    }
  });

  test("frames written again are the captured bytes (the first of the decode side with DMHF and version 1)", () => {
    for (const conv of capture.handoff) {
      for (const [stream, hello] of [[conv.decode_to_prefill, true], [conv.prefill_to_decode, false]] as const) {
        const frames = readAll(hex(stream), hello);
        const written = Buffer.concat(frames.map((f, i) => encodeHandoffFrame(f, hello && i === 0)));
        expect(written.toString("hex")).toBe(stream);
      }
    }
  });

  test("the frontend's bootstrap_info: a u64 room exactly, the handoff id's 16 bytes as its uuid", () => {
    const captured = capture.requests.decode[0]!.body.msgpack.bootstrap_info;
    const bin = Uint8Array.from(Buffer.from((captured.handoff_id as { bin_hex: string }).bin_hex, "hex"));
    const parsed = parseBootstrapInfo({ ...captured, bootstrap_room: 1293913770916356020n, handoff_id: bin });
    expect(parsed).toEqual({ ok: true, value: { host: "127.0.0.1", port: captured.bootstrap_port as number, room: 1293913770916356020n, handoffId: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/) } });
    expect(parseBootstrapInfo(null)).toEqual({ ok: true, value: undefined });
    // JSON carries the handoff id as its text: any case, read as lowercase.
    expect(parseBootstrapInfo({ bootstrap_host: "h", bootstrap_port: 1, bootstrap_room: 1, handoff_id: "5276ACBF-B05D-4677-A05F-DEE7B80DBF24" })).toEqual({ ok: true, value: { host: "h", port: 1, room: 1n, handoffId: "5276acbf-b05d-4677-a05f-dee7b80dbf24" } });
    const bad = (v: unknown) => (parseBootstrapInfo(v) as { problem: string }).problem;
    expect(bad([])).toBe("generate request: bootstrap_info must be an object");
    expect(bad({ bootstrap_host: "", bootstrap_port: 1, bootstrap_room: 1 })).toContain("bootstrap_host must be a non-empty string");
    expect(bad({ bootstrap_host: "h", bootstrap_port: 70000, bootstrap_room: 1 })).toContain("bootstrap_port must be a port from 1 to 65535");
    expect(bad({ bootstrap_host: "h", bootstrap_port: 1, bootstrap_room: -1 })).toBe("generate request: bootstrap_info.bootstrap_room must be a u64, got -1");
    expect(bad({ bootstrap_host: "h", bootstrap_port: 1, bootstrap_room: 2n ** 64n })).toContain("must be a u64, got 18446744073709551616");
    expect(bad({ bootstrap_host: "h", bootstrap_port: 1, bootstrap_room: 1, handoff_id: "nope" })).toContain("handoff_id must be a uuid");
  });

  test("a stream that is not the hand-over is refused naming why", () => {
    const problem = (bytes: Uint8Array, hello = true) => (new HandoffReader(hello).push(bytes) as { ok: false; problem: string }).problem;
    expect(problem(Uint8Array.from(Buffer.from("GET / HTTP/1.1\r\n")))).toBe("hand-over stream does not start with DMHF (got 0x47455420)");
    expect(problem(Uint8Array.of(0x44, 0x4d, 0x48, 0x46, 2, 0, 0, 0))).toBe("hand-over version 2 (this worker speaks 1)");
    expect(new HandoffReader(false).push(Uint8Array.of(0, 0, 2, 0))).toEqual({ ok: false, problem: "hand-over frame of 131072 bytes (at most 65536)" });
    expect(problem(Uint8Array.of(2, 0, 0, 0, 0x7b, 0x7d), false)).toBe("hand-over frame lacks identity {handoff_id, bootstrap_room, request_id} or message");
    expect(problem(Uint8Array.of(1, 0, 0, 0, 0x7b), false)).toStartWith("hand-over frame is not JSON: ");
  });
});
