import { describe, expect, test } from "bun:test";
import { nixlReplyParams, parseKvTransferParams } from "./kv-transfer-params.ts";

const reply = { do_remote_prefill: true, do_remote_decode: false, remote_engine_id: "w0_dp0", remote_request_id: "r1", remote_host: "127.0.0.1", remote_port: 5600, remote_block_ids: [3, 4], tp_size: 1 };

describe("kv_transfer_params", () => {
  test("the proxy's prefill leg (None for unused fields) and its decode leg", () => {
    const prefill = parseKvTransferParams({ do_remote_decode: true, do_remote_prefill: false, remote_engine_id: null, remote_block_ids: null, remote_host: null, remote_port: null });
    expect(prefill).toEqual({ ok: true, value: { doRemoteDecode: true } });
    const decode = parseKvTransferParams(reply);
    expect(decode).toEqual({ ok: true, value: { doRemoteDecode: false, remotePrefill: { engineId: "w0_dp0", requestId: "r1", host: "127.0.0.1", port: 5600, blockIds: [3, 4] } } });
  });

  test("the reply round-trips through the parser", () => {
    const p = parseKvTransferParams(nixlReplyParams({ engineId: "e", requestId: "q", host: "h", port: 1, blockIds: [0] }));
    expect(p.ok && p.value.remotePrefill).toEqual({ engineId: "e", requestId: "q", host: "h", port: 1, blockIds: [0] });
  });

  test("wrong types name the field", () => {
    const cases: [unknown, string][] = [
      ["yes", "kv_transfer_params"],
      [{ do_remote_decode: "true" }, "kv_transfer_params.do_remote_decode"],
      [{ ...reply, remote_port: "5600" }, "kv_transfer_params.remote_port"],
      [{ ...reply, remote_port: 70000 }, "kv_transfer_params.remote_port"],
      [{ ...reply, remote_block_ids: [1, -2] }, "kv_transfer_params.remote_block_ids[1]"],
      [{ ...reply, remote_block_ids: "1,2" }, "kv_transfer_params.remote_block_ids"],
      [{ ...reply, remote_engine_id: 7 }, "kv_transfer_params.remote_engine_id"],
      [{ ...reply, remote_host: undefined }, "kv_transfer_params.remote_host"],
      [{ ...reply, tp_size: 0 }, "kv_transfer_params.tp_size"],
      [{ do_remote_decode: true, do_remote_prefill: true }, "kv_transfer_params.do_remote_prefill"],
    ];
    for (const [body, field] of cases) {
      const p = parseKvTransferParams(body);
      expect(p.ok).toBe(false);
      if (!p.ok) {
        expect(p.field).toBe(field);
        expect(p.problem.startsWith(`${field}: expected`)).toBe(true);
      }
    }
  });
});

describe("kv_transfer_params bounds and the reply NIXL expects", () => {
  test("ports 1 and 65535 are accepted, 0 is not; the reply is tp_size 1", () => {
    expect(parseKvTransferParams({ ...reply, remote_port: 1 }).ok).toBe(true);
    expect(parseKvTransferParams({ ...reply, remote_port: 65535 }).ok).toBe(true);
    expect(parseKvTransferParams({ ...reply, remote_port: 0 }).ok).toBe(false);
    expect(nixlReplyParams({ engineId: "e", requestId: "q", host: "h", port: 1, blockIds: [0] })).toEqual({
      do_remote_prefill: true, do_remote_decode: false, remote_block_ids: [0], remote_engine_id: "e", remote_request_id: "q", remote_host: "h", remote_port: 1, tp_size: 1,
    });
  });
});

describe("kv_transfer_params on /v1/generate", () => {
  const limits = { maxPromptTokens: 100, maxOutputTokens: 100 };
  test("parsed onto the request; a wrong type is the body's problem, naming the field", async () => {
    const { parseGenerateRequest } = await import("./generate.ts");
    const ok = parseGenerateRequest({ worker: 0, token_ids: [1], max_tokens: 1, kv_transfer_params: { do_remote_decode: true } }, limits);
    expect(ok.ok && ok.value.kvTransferParams).toEqual({ doRemoteDecode: true });
    const bad = parseGenerateRequest({ worker: 0, token_ids: [1], max_tokens: 1, kv_transfer_params: { ...reply, remote_block_ids: [0.5] } }, limits);
    expect(bad).toEqual({ ok: false, problem: "kv_transfer_params.remote_block_ids[0]: expected a block id (an integer ≥ 0), got 0.5" });
  });
});
