// The request plane against a frontend played by the test over real loopback TCP: acks, the
// call-home stream in Dynamo's order, cancellation by `stop`, and bad frames refused by name while
// the worker keeps serving.
import { describe, expect, test } from "bun:test";
import type { GenerateRequest, GenerateSummary } from "../../../protocol/generate.ts";
import { encodeRequestFrame, encodeTwoPart, parseTwoPart } from "../../../protocol/dynamo/tcp-frames.ts";
import { waitFor } from "../../../../test/harness.ts";
import type { Submitter } from "../generation.ts";
import type { TokenSink } from "../token-stream.ts";
import { DynamoRequestPlane } from "./request-plane.ts";

const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} } as never;
const json = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

/** A fake engine: `tokens` tokens one per 5 ms unless cancelled; `transfer` rides on its finish (a prefill's reply). */
function engine(tokens: number, transfer?: Record<string, unknown>): Submitter & { cancelled: string[]; seen: GenerateRequest[] } {
  const cancelled: string[] = [];
  const seen: GenerateRequest[] = [];
  let n = 0;
  return {
    cancelled,
    seen,
    submit(req: GenerateRequest, sink: TokenSink) {
      seen.push(req);
      const id = `r${n++}`;
      let i = 0;
      const timer = setInterval(() => {
        if (cancelled.includes(id)) return clearInterval(timer);
        if (i < tokens) sink.tokens([i++]);
        else {
          clearInterval(timer);
          sink.finish({ finish_reason: "length", prompt_tokens: req.tokenIds.length, cached_tokens: 0, host_loaded_tokens: 0, completion_tokens: tokens, ...(transfer ? { kv_transfer_params: transfer } : {}) } satisfies GenerateSummary);
        }
      }, 5);
      return { ok: true as const, requestId: id };
    },
    cancel: (id: string) => void cancelled.push(id),
  };
}

/** The frontend's side: a response server that records each stream's frames, and a request connection. */
function frontend() {
  const streams: { headers: string[]; bodies: unknown[]; socket: { write(b: Uint8Array): void } }[] = [];
  const server = Bun.listen<{ buf: Uint8Array; i: number }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open: (s) => {
        s.data = { buf: new Uint8Array(0), i: streams.length };
        streams.push({ headers: [], bodies: [], socket: s });
      },
      data: (s, chunk) => {
        const buf = new Uint8Array(s.data.buf.length + chunk.length);
        buf.set(s.data.buf);
        buf.set(chunk, s.data.buf.length);
        let rest: Uint8Array = buf;
        for (let f = parseTwoPart(rest); f?.ok; f = parseTwoPart(rest)) {
          const st = streams[s.data.i]!;
          if (f.value.header.length) st.headers.push(new TextDecoder().decode(f.value.header));
          if (f.value.body.length) st.bodies.push(JSON.parse(new TextDecoder().decode(f.value.body)));
          rest = rest.subarray(f.used);
        }
        s.data.buf = rest.slice();
      },
    },
  });
  const request = (path: string, subject: string, body: unknown, control?: unknown) =>
    encodeRequestFrame({
      path,
      headers: { "request-id": subject },
      payload: encodeTwoPart(json(control ?? { id: subject, request_type: "single_in", response_type: "many_out", payload_codec: "json", connection_info: { transport: "tcp_server", info: JSON.stringify({ address: `127.0.0.1:${server.port}`, subject, context: subject, stream_type: "response" }) } }), json(body)),
    });
  return { server, streams, request };
}

async function dial(port: number) {
  const acks: string[] = [];
  let closed = false;
  let buf = new Uint8Array(0);
  const socket = await Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: {
      data: (_s, chunk) => {
        const all = new Uint8Array(buf.length + chunk.length);
        all.set(buf);
        all.set(chunk, buf.length);
        buf = all;
        while (buf.length >= 4) {
          const len = new DataView(buf.buffer, buf.byteOffset).getUint32(0);
          if (buf.length < 4 + len) break;
          acks.push(new TextDecoder().decode(buf.subarray(4, 4 + len)));
          buf = buf.slice(4 + len);
        }
      },
      close: () => void (closed = true),
    },
  });
  return { socket, acks, closed: () => closed };
}

const PATH = "1f/dynamo/backend/generate";
const GEN = { model: "m", token_ids: [1, 2, 3], stop_conditions: { max_tokens: 3 }, routing: { dp_rank: 0 }, some_new_field: true };

describe("Dynamo request plane", () => {
  test("acks, calls home and streams handshake, prologue, tokens, the final item, complete_final and the sentinel", async () => {
    const fe = frontend();
    const eng = engine(3);
    using plane = new DynamoRequestPlane({ host: "127.0.0.1", workers: [{ index: 0, path: PATH, dataParallelSize: 1 }], engines: eng, logger: quiet, maxPromptTokens: 100, defaultMaxTokens: 16 });
    const c = await dial(plane.port);
    c.socket.write(fe.request(PATH, "s1", GEN));
    await waitFor(() => fe.streams[0]?.headers.includes('"sentinel"'), { what: "the sentinel", timeoutMs: 5_000 });
    const st = fe.streams[0]!;
    expect(c.acks).toEqual([""]);
    expect(st.headers).toEqual(['{"subject":"s1","stream_type":"response"}', '{"error":null}', '"sentinel"']);
    expect(st.bodies.slice(0, 3)).toEqual([0, 1, 2].map((t) => ({ data: { data: { token_ids: [t] } }, complete_final: false })));
    expect(st.bodies[3]).toEqual({ data: { data: { token_ids: [], finish_reason: "length", completion_usage: { prompt_tokens: 3, completion_tokens: 3, total_tokens: 6, prompt_tokens_details: { cached_tokens: 0 } } } }, complete_final: false });
    expect(st.bodies[4]).toEqual({ complete_final: true });
    expect(eng.seen[0]).toMatchObject({ worker: 0, dpRank: 0, tokenIds: [1, 2, 3], maxTokens: 3, requestId: "s1" });
    expect(plane.stats.unknownFields).toBe(1);
    c.socket.end();
    fe.server.stop(true);
  });

  test("`stop` from the frontend cancels the engine request", async () => {
    const fe = frontend();
    const eng = engine(1_000);
    using plane = new DynamoRequestPlane({ host: "127.0.0.1", workers: [{ index: 0, path: PATH, dataParallelSize: 1 }], engines: eng, logger: quiet, maxPromptTokens: 100, defaultMaxTokens: 16 });
    const c = await dial(plane.port);
    c.socket.write(fe.request(PATH, "s2", GEN));
    await waitFor(() => (fe.streams[0]?.bodies.length ?? 0) >= 2, { what: "two tokens", timeoutMs: 5_000 });
    fe.streams[0]!.socket.write(encodeTwoPart(json("stop"), undefined));
    await waitFor(() => eng.cancelled.length === 1, { what: "the cancel", timeoutMs: 5_000 });
    expect(plane.stats.cancelled).toBe(1);
    c.socket.end();
    fe.server.stop(true);
  });

  test("bad requests are refused naming the problem; a broken frame closes only its connection", async () => {
    const fe = frontend();
    const eng = engine(1);
    using plane = new DynamoRequestPlane({ host: "127.0.0.1", workers: [{ index: 0, path: PATH, dataParallelSize: 1 }], engines: eng, logger: quiet, maxPromptTokens: 2, defaultMaxTokens: 16 });
    const c = await dial(plane.port);
    c.socket.write(fe.request("ff/dynamo/backend/generate", "a", GEN));
    c.socket.write(fe.request(PATH, "b", GEN, { id: "b" }));
    c.socket.write(fe.request(PATH, "c", { ...GEN, token_ids: [1, 2] }));
    c.socket.write(fe.request(PATH, "d", { ...GEN, token_ids: [1, 2], routing: { dp_rank: 3 } }));
    await waitFor(() => c.acks.length === 4, { what: "four acks", timeoutMs: 5_000 });
    expect(c.acks[0]).toBe('Server unavailable: no endpoint "ff/dynamo/backend/generate" in this process');
    expect(c.acks[1]).toContain("connection_info");
    expect(c.acks[2]).toBe("");
    expect(c.acks[3]).toContain("routing.dp_rank 3 is not a rank");
    // A frame over the size limit cannot be skipped: refused, and that connection ends.
    const huge = new Uint8Array(10);
    new DataView(huge.buffer).setUint32(4, 0x7fff_fff0);
    c.socket.write(huge);
    await waitFor(() => c.closed(), { what: "the broken connection to close", timeoutMs: 5_000 });
    expect(c.acks[4]).toContain("exceeds");
    // The worker keeps serving on a new connection.
    const again = await dial(plane.port);
    again.socket.write(fe.request(PATH, "e", { ...GEN, token_ids: [1] }));
    await waitFor(() => again.acks.length === 1, { what: "the next ack", timeoutMs: 5_000 });
    expect(again.acks).toEqual([""]);
    again.socket.end();
    fe.server.stop(true);
  });

  test("a prefill leg's token goes out with its hand-over params and usage (as Dynamo's prefill answers); its bootstrap_info and room reach the engine losslessly", async () => {
    const fe = frontend();
    const reply = { do_remote_prefill: true, remote_engine_id: "e", remote_request_id: "r0", remote_block_ids: [4], remote_host: "127.0.0.1", remote_port: 9, tp_size: 1 };
    const eng = engine(1, reply);
    using plane = new DynamoRequestPlane({ host: "127.0.0.1", workers: [{ index: 0, path: PATH, dataParallelSize: 1 }], engines: eng, logger: quiet, maxPromptTokens: 100, defaultMaxTokens: 16, mode: "prefill" });
    const c = await dial(plane.port);
    // The frontend's JSON writes a u64 room as digits past 2^53: read exactly, not rounded.
    const bootstrap = '{"bootstrap_host":"127.0.0.1","bootstrap_port":7001,"bootstrap_room":18446744073709551557,"handoff_id":"5276acbf-b05d-4677-a05f-dee7b80dbf24"}';
    const body = JSON.stringify({ ...GEN, stop_conditions: { max_tokens: 1 } }).replace(/}$/, `,"bootstrap_info":${bootstrap}}`);
    c.socket.write(encodeRequestFrame({ path: PATH, headers: {}, payload: encodeTwoPart(json({ id: "p", request_type: "single_in", response_type: "many_out", payload_codec: "json", connection_info: { transport: "tcp_server", info: JSON.stringify({ address: `127.0.0.1:${fe.server.port}`, subject: "p", context: "p", stream_type: "response" }) } }), new TextEncoder().encode(body)) }));
    await waitFor(() => fe.streams[0]?.headers.includes('"sentinel"'), { what: "the sentinel", timeoutMs: 5_000 });
    expect(eng.seen[0]!.bootstrap).toEqual({ host: "127.0.0.1", port: 7001, room: 18446744073709551557n, handoffId: "5276acbf-b05d-4677-a05f-dee7b80dbf24" });
    // Under a rendezvous the prefill does not hold for a NixlConnector pull: the room is its hand-over.
    expect(eng.seen[0]!.kvTransferParams).toBeUndefined();
    const usage = { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4, prompt_tokens_details: { cached_tokens: 0 } };
    expect(fe.streams[0]!.bodies.slice(0, 2)).toEqual([
      { data: { data: { token_ids: [0], disaggregated_params: reply, completion_usage: usage } }, complete_final: false },
      { data: { data: { token_ids: [], finish_reason: "length", completion_usage: usage } }, complete_final: false },
    ]);
    c.socket.end();
    fe.server.stop(true);
  });

  test("a decode leg pulls what a kvcr-mock prefill answered; another prefill's params (Dynamo's \"dummy\") mean the prompt is computed here", async () => {
    const fe = frontend();
    const eng = engine(1);
    using plane = new DynamoRequestPlane({ host: "127.0.0.1", workers: [{ index: 0, path: PATH, dataParallelSize: 1 }], engines: eng, logger: quiet, maxPromptTokens: 100, defaultMaxTokens: 16, mode: "decode" });
    const c = await dial(plane.port);
    const reply = { do_remote_prefill: true, do_remote_decode: false, remote_engine_id: "e", remote_request_id: "r0", remote_block_ids: [4, 5], remote_host: "127.0.0.1", remote_port: 9, tp_size: 1 };
    c.socket.write(fe.request(PATH, "d1", { ...GEN, prefill_result: { disaggregated_params: reply, prompt_tokens_details: { cached_tokens: 0 } } }));
    c.socket.write(fe.request(PATH, "d2", { ...GEN, prefill_result: { disaggregated_params: "dummy" }, kv_hint: { transfer: { source: "w1" } } }));
    c.socket.write(fe.request(PATH, "d3", { ...GEN, bootstrap_info: { bootstrap_host: "h", bootstrap_port: 0, bootstrap_room: 1 } }));
    await waitFor(() => c.acks.length === 3 && eng.seen.length === 2, { what: "three acks", timeoutMs: 5_000 });
    expect(eng.seen[0]!.kvTransferParams).toEqual({ doRemoteDecode: false, remotePrefill: { engineId: "e", requestId: "r0", blockIds: [4, 5], host: "127.0.0.1", port: 9 } });
    expect(eng.seen[1]!.kvTransferParams).toBeUndefined();
    // A router hint reaches the engine's request (the pool logs it and acts on nothing).
    expect(eng.seen[1]!.kvHint).toEqual({ transfer: { source: "w1" } });
    expect(c.acks[2]).toBe("Server unavailable: generate request: bootstrap_info.bootstrap_port must be a port from 1 to 65535");
    c.socket.end();
    fe.server.stop(true);
  });

  test("a request the engine refuses fails in its stream (an error item), not by an error prologue: the frontend keeps the worker routable", async () => {
    const fe = frontend();
    const eng: Submitter = { submit: () => ({ ok: false, status: 404, message: "The model `sql` does not exist." }), cancel: () => {} };
    using plane = new DynamoRequestPlane({ host: "127.0.0.1", workers: [{ index: 0, path: PATH, dataParallelSize: 1 }], engines: eng, logger: quiet, maxPromptTokens: 100, defaultMaxTokens: 16 });
    const c = await dial(plane.port);
    c.socket.write(fe.request(PATH, "e1", { ...GEN, routing: { dp_rank: 0, lora_name: "sql" } }));
    await waitFor(() => fe.streams[0]?.headers.includes('"sentinel"'), { what: "the sentinel", timeoutMs: 5_000 });
    expect(fe.streams[0]!.headers).toEqual(['{"subject":"e1","stream_type":"response"}', '{"error":null}', '"sentinel"']);
    expect(fe.streams[0]!.bodies).toEqual([{ data: { event: "error", comment: ["404: The model `sql` does not exist."] }, complete_final: false }, { complete_final: true }]);
    c.socket.end();
    fe.server.stop(true);
  });
});
