// The Dynamo codecs against the bytes Dynamo 1.6.1 itself wrote (test/fixtures/dynamo-1.6.1,
// captured from Dynamo's frontend and mocker): the same values encode to the same bytes, and the
// captured frames parse.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { MsgpackWriter, unpack } from "../msgpack.ts";
import { eventKey, instanceKey, keyFileName, loraModelKey, loraModelRecord, modelRecord, modelSlug, parseEndpointId, tcpTransport, type ModelCardInput } from "./discovery-records.ts";
import { encodeEventMessage, encodeRouterEvents, type DynamoRouterEvent } from "./event-plane.ts";
import { COMPLETE_FINAL, parseDynamoGenerate } from "./generate.ts";
import { encodeRequestFrame, encodeTwoPart, parseRequestControl, parseRequestFrame, parseTwoPart, SENTINEL } from "./tcp-frames.ts";

const FIX = join(import.meta.dir, "../../../test/fixtures/dynamo-1.6.1");
const fixture = (name: string) => JSON.parse(readFileSync(join(FIX, name), "utf8"));
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const bytes = (h: string) => new Uint8Array(Buffer.from(h, "hex"));

describe("event plane", () => {
  test("a captured kv-events message re-encodes to Dynamo's exact bytes", () => {
    const [message] = fixture("kv-events.json").messages as { frames_hex: string[] }[];
    const frames = message!.frames_hex.map(bytes);
    const frame = frames[3]!;
    const view = new DataView(frame.buffer, frame.byteOffset);
    expect(view.getUint8(0)).toBe(1);
    expect(view.getUint32(1)).toBe(frame.length - 5);
    const envelope = unpack(frame.subarray(5)) as { publisher_id: bigint | number; sequence: number; published_at: bigint | number; topic: string; payload: Uint8Array };
    const payload = unpack(envelope.payload) as { worker_id: bigint; event: { event_id: number; dp_rank: number; data: { stored: { parent_hash: bigint | null; blocks: { block_hash: bigint; tokens_hash: bigint }[] } } } }[];
    const workerId = payload[0]!.worker_id;
    // Dynamo's own worker id is full-range u64; ours are ≤ 2^53−1. Encode with a stand-in and splice.
    const events: DynamoRouterEvent[] = payload.map((e) => ({
      eventId: e.event.event_id,
      tier: "device",
      event: { kind: "stored", parentHash: e.event.data.stored.parent_hash, blockHashes: e.event.data.stored.blocks.map((b) => BigInt(b.block_hash)), localHashes: e.event.data.stored.blocks.map((b) => BigInt(b.tokens_hash)) },
    }));
    const ours = encodeRouterEvents(new MsgpackWriter(), 1, payload[0]!.event.dp_rank, events);
    const theirs = envelope.payload;
    const marker = (id: bigint) => hex(new Uint8Array([0xcf, ...Buffer.from(id.toString(16).padStart(16, "0"), "hex")]));
    expect(hex(ours).replace("a9776f726b65725f696401", `a9776f726b65725f6964${marker(BigInt(workerId))}`)).toBe(hex(theirs));
    const msg = encodeEventMessage(new MsgpackWriter(), envelope.topic, Number(envelope.publisher_id), envelope.sequence, Number(envelope.published_at), theirs);
    expect(msg.map(hex)).toEqual(message!.frames_hex);
  });
});

describe("the host tier", () => {
  test("captured host-tier stores and device removals re-encode to Dynamo's exact bytes", () => {
    type Captured = { worker_id: bigint; storage_tier: "device" | "host_pinned"; event: { event_id: number; dp_rank: number; data: { stored?: { parent_hash: bigint | null; start_position: number | null; blocks: { block_hash: bigint; tokens_hash: bigint }[] }; removed?: { block_hashes: bigint[] } } } };
    const messages = fixture("kv-events-host.json").messages as { frames_hex: string[] }[];
    const tiers = new Set<string>();
    for (const message of messages) {
      const envelope = unpack(bytes(message.frames_hex[3]!).subarray(5)) as { payload: Uint8Array };
      const payload = unpack(envelope.payload) as Captured[];
      const events: DynamoRouterEvent[] = payload.map((e) => {
        tiers.add(`${e.storage_tier} ${Object.keys(e.event.data)[0]}`);
        const { stored, removed } = e.event.data;
        const event = stored
          ? { kind: "stored" as const, parentHash: stored.parent_hash, blockHashes: stored.blocks.map((b) => BigInt(b.block_hash)), localHashes: stored.blocks.map((b) => BigInt(b.tokens_hash)) }
          : { kind: "removed" as const, blockHashes: removed!.block_hashes.map(BigInt) };
        return { eventId: e.event.event_id, tier: e.storage_tier, event, ...(stored?.start_position != null ? { startPosition: stored.start_position } : {}) };
      });
      const ours = encodeRouterEvents(new MsgpackWriter(), 1, payload[0]!.event.dp_rank, events);
      const marker = hex(new Uint8Array([0xcf, ...Buffer.from(BigInt(payload[0]!.worker_id).toString(16).padStart(16, "0"), "hex")]));
      expect(hex(ours).replaceAll("a9776f726b65725f696401", `a9776f726b65725f6964${marker}`)).toBe(hex(envelope.payload));
    }
    // The capture holds what the check needs: host stores beside device stores and removals.
    expect([...tiers].sort()).toEqual(["device removed", "device stored", "host_pinned stored"]);
  });
});

describe("request and response planes", () => {
  test("every captured request frame parses, its control names where to call home, and it round-trips", () => {
    for (const conn of fixture("request-plane.json") as { frames: { raw_hex: string; path: string }[] }[]) {
      for (const f of conn.frames) {
        const raw = bytes(f.raw_hex);
        const parsed = parseRequestFrame(raw);
        expect(parsed?.ok).toBe(true);
        if (!parsed?.ok) continue;
        expect(parsed.used).toBe(raw.length);
        expect(parsed.value.path).toBe(f.path);
        expect(parseRequestFrame(encodeRequestFrame(parsed.value))).toEqual(parsed);
        const two = parseTwoPart(parsed.value.payload);
        expect(two?.ok).toBe(true);
        if (!two?.ok) continue;
        const control = parseRequestControl(two.value.header);
        expect(control.ok && control.value.address).toMatch(/^127\.0\.0\.1:\d+$/);
        if (f.path.endsWith("/generate")) {
          const g = parseDynamoGenerate(unpack(two.value.body), 1 << 20);
          expect(g.ok && g.value.maxTokens).toBe(3);
          expect(g.ok && g.value.unknownFields).toEqual([]);
        }
      }
    }
  });

  test("the end of a stream is byte-equal to Dynamo's: complete_final, then the sentinel", () => {
    const stream = (fixture("response-plane.json") as { worker_to_frontend: { raw_hex: string }[] }[])[1]!.worker_to_frontend;
    expect(hex(SENTINEL)).toBe(stream.at(-1)!.raw_hex);
    // Dynamo's mocker answers in msgpack; the same item in msgpack, as the frontend reads it.
    const final = parseTwoPart(bytes(stream.at(-2)!.raw_hex));
    expect(final?.ok && unpack(final.value.body)).toEqual(COMPLETE_FINAL);
  });

  test("incomplete input waits; oversized and garbled frames are refused naming the problem", () => {
    const frame = encodeRequestFrame({ path: "1/ns/c/e", headers: { a: "b" }, payload: encodeTwoPart(new Uint8Array([123, 125]), undefined) });
    for (let cut = 0; cut < frame.length; cut++) expect(parseRequestFrame(frame.subarray(0, cut))).toBeUndefined();
    const huge = new Uint8Array(10);
    new DataView(huge.buffer).setUint32(4, 0xffff_fff0);
    expect(parseRequestFrame(huge)).toEqual({ ok: false, problem: expect.stringContaining("exceeds") });
    const badHeaders = encodeRequestFrame({ path: "x", headers: {}, payload: new Uint8Array() });
    badHeaders.set(new TextEncoder().encode("[]"), 5);
    expect(parseRequestFrame(badHeaders)?.ok).toBe(false);
    expect(parseRequestControl(new TextEncoder().encode("{}"))).toEqual({ ok: false, problem: expect.stringContaining("connection_info") });
    expect(parseRequestControl(new TextEncoder().encode('{"payload_codec":"cbor"}'))).toEqual({ ok: false, problem: expect.stringContaining("cbor") });
    expect(parseDynamoGenerate({ token_ids: [] }, 10)).toEqual({ ok: false, problem: expect.stringContaining("token_ids") });
    expect(parseDynamoGenerate({ token_ids: [1, -2] }, 10)).toEqual({ ok: false, problem: expect.stringContaining("token_ids[1]") });
    expect(parseDynamoGenerate({ token_ids: [1], new_field: 1 }, 10)).toMatchObject({ ok: true, value: { unknownFields: ["new_field"] } });
  });
});

describe("discovery records", () => {
  test("keys, file names and the transport address are Dynamo's", () => {
    const d = fixture("discovery.json") as Record<string, { file: string; key: string; value: Record<string, unknown> }[]>;
    const ep = parseEndpointId("dyn://dynamo.backend.generate")!;
    const instance = d.instances!.find((r) => r.value.endpoint === "generate")!;
    const idHex = instance.key.split("/").pop()!;
    // Dynamo's id exceeds 2^53: the key and address are built from its hex, as ours are from our ids.
    expect(instance.key).toBe(instanceKey(ep, 0).replace(/\/0$/, `/${idHex}`));
    expect(keyFileName("dynamo/backend/generate/ab")).toBe("dynamo%2Fbackend%2Fgenerate%2Fab");
    expect((instance.value.transport as { tcp: string }).tcp.replace(/^[^/]+/, "")).toBe(tcpTransport("", ep, 0).replace("/0/", `/${idHex}/`));
    const source = d.event_sources![0]!;
    const pub = source.value.publisher_id as number;
    expect(source.key).toBe(eventKey(ep, "kv-events", pub));
    expect(source.file).toBe(keyFileName(eventKey(ep, "kv-events", pub)));
    expect(modelSlug("Qwen/Qwen3-0.6B")).toBe("qwen_qwen3-0_6b");
    expect(modelSlug("/tmp/mf")).toBe("tmp_mf");
    expect(parseEndpointId("dyn://a.b")).toBeUndefined();
  });
});

describe("model cards", () => {
  const file = { path: "/m/x", checksum: "blake3:00", size: 1 };
  const input = (workerType: ModelCardInput["workerType"], bootstrap?: { host: string; port: number }): ModelCardInput => ({
    displayName: "mock-model", sourcePath: "/m", tokenizer: file, config: file, tokenizerConfig: file, architecturalMaxContextLength: 32768, blockSize: 16,
    workerType, totalKvBlocks: 16384, maxNumSeqs: 256, maxNumBatchedTokens: 8192, dataParallelSize: 1, ...(bootstrap ? { bootstrap } : {}),
  });
  /** What a card says a worker is and needs: the fields Dynamo's frontend acts on. */
  const role = (record: Record<string, unknown>) => {
    const c = record.card_json as Record<string, unknown>;
    const rc = c.runtime_config as Record<string, unknown>;
    return { model_type: c.model_type, worker_type: c.worker_type, needs: c.needs, kv_event_publishing_enabled: rc.kv_event_publishing_enabled, disaggregated_endpoint: rc.disaggregated_endpoint !== undefined };
  };
  const captured = (name: string, type: string) => (fixture(name).discovery.mdc as { value: Record<string, unknown> }[]).find((r) => (r.value.card_json as { worker_type: string }).worker_type === type)!.value;
  const ep = parseEndpointId("dyn://dynamo.backend.generate")!;

  test("prefill and decode cards say what Dynamo's own mocker's say", () => {
    const prefillEp = parseEndpointId("dyn://dynamo.prefill.generate")!;
    expect(role(modelRecord(prefillEp, 1, input("prefill", { host: "127.0.0.1", port: 7001 })))).toEqual(role(captured("disagg-bootstrap.json", "prefill")));
    expect(role(modelRecord(prefillEp, 1, input("prefill")))).toEqual(role(captured("disagg-no-bootstrap.json", "prefill")));
    expect(role(modelRecord(ep, 1, input("decode")))).toEqual(role(captured("disagg-bootstrap.json", "decode")));
    expect((modelRecord(prefillEp, 1, input("prefill", { host: "h", port: 7001 })).card_json as { runtime_config: unknown }).runtime_config).toMatchObject({ disaggregated_endpoint: { bootstrap_host: "h", bootstrap_port: 7001 } });
  });

  test("a LoRA adapter's card is keyed, named and marked as Dynamo's worker registers one", () => {
    const lora = (fixture("lora.json").discovery.mdc as { key: string; value: Record<string, unknown> }[]).find((r) => r.value.model_suffix !== undefined)!;
    const id = lora.value.instance_id as number;
    const ours = loraModelRecord(ep, 1, input("aggregated"), { name: "sql-adapter", id: 1 });
    expect(lora.key).toBe(loraModelKey(ep, 0, "sql-adapter").replace("/0/", `/${lora.key.split("/")[3]}/`));
    expect(id).toBeGreaterThan(0);
    const pick = (r: Record<string, unknown>) => {
      const c = r.card_json as Record<string, unknown>;
      return { model_suffix: r.model_suffix, display_name: c.display_name, slug: c.slug, lora: c.lora, user_data: c.user_data, model_type: c.model_type, worker_type: c.worker_type };
    };
    expect(pick(ours)).toEqual(pick(lora.value));
    // The request for it names the adapter in its routing, where the parser reads it.
    const request = (fixture("lora.json").requests as Record<string, unknown>[]).find((r) => r.model === "sql-adapter")!;
    expect(parseDynamoGenerate(request, 1 << 20)).toMatchObject({ ok: true, value: { loraName: "sql-adapter" } });
  });
});
