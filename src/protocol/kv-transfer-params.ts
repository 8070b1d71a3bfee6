// vLLM NixlConnector's `kv_transfer_params`, as a P/D leg carries them and a prefill worker answers
// them; parsed with a problem naming the field (→ 400). null is absent (vLLM's proxies send None
// for fields a leg does not use); unknown keys pass, as vLLM's dict.

/** Where a decode worker pulls a request's prompt KV from. */
export interface RemotePrefill {
  engineId: string;
  requestId: string;
  blockIds: number[];
  host: string;
  port: number;
}

export interface KvTransferParams {
  doRemoteDecode: boolean;
  /** Set when do_remote_prefill is true (every remote_* field present). */
  remotePrefill?: RemotePrefill;
}

export type KvTransferParse = { ok: true; value: KvTransferParams } | { ok: false; field: string; problem: string };

const FIELD = "kv_transfer_params";

export function parseKvTransferParams(v: unknown): KvTransferParse {
  const fail = (key: string, expected: string, got: unknown): KvTransferParse => {
    const field = key === "" ? FIELD : `${FIELD}.${key}`;
    return { ok: false, field, problem: `${field}: expected ${expected}, got ${show(got)}` };
  };
  if (typeof v !== "object" || v === null || Array.isArray(v)) return fail("", "a JSON object", v);
  const b = v as Record<string, unknown>;
  const bool = (key: string): boolean | KvTransferParse => {
    const x = b[key];
    if (x === undefined || x === null) return false;
    return typeof x === "boolean" ? x : fail(key, "true or false", x);
  };
  const doRemoteDecode = bool("do_remote_decode");
  if (typeof doRemoteDecode !== "boolean") return doRemoteDecode;
  const doRemotePrefill = bool("do_remote_prefill");
  if (typeof doRemotePrefill !== "boolean") return doRemotePrefill;
  // Typed when present, whichever leg: a wrong type is a client bug worth a 400 either way.
  for (const key of ["remote_engine_id", "remote_request_id", "remote_host"]) {
    const x = b[key];
    if (x !== undefined && x !== null && (typeof x !== "string" || x.length === 0)) return fail(key, "a non-empty string", x);
  }
  const port = b.remote_port;
  if (port !== undefined && port !== null && !(Number.isInteger(port) && (port as number) >= 1 && (port as number) <= 65535)) return fail("remote_port", "a port from 1 to 65535", port);
  const tp = b.tp_size;
  if (tp !== undefined && tp !== null && !(Number.isInteger(tp) && (tp as number) >= 1)) return fail("tp_size", "an integer ≥ 1", tp);
  const ids = b.remote_block_ids;
  if (ids !== undefined && ids !== null) {
    if (!Array.isArray(ids)) return fail("remote_block_ids", "an array of block ids", ids);
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      if (!Number.isInteger(id) || (id as number) < 0) return fail(`remote_block_ids[${i}]`, "a block id (an integer ≥ 0)", id);
    }
  }
  if (doRemoteDecode && doRemotePrefill) return fail("do_remote_prefill", "false when do_remote_decode is true (one leg at a time)", true);
  if (!doRemotePrefill) return { ok: true, value: { doRemoteDecode } };
  for (const key of ["remote_engine_id", "remote_request_id", "remote_host", "remote_port", "remote_block_ids"]) {
    if (b[key] === undefined || b[key] === null) return fail(key, "a value with do_remote_prefill (the prefill reply's params)", b[key]);
  }
  return {
    ok: true,
    value: {
      doRemoteDecode: false,
      remotePrefill: {
        engineId: b.remote_engine_id as string,
        requestId: b.remote_request_id as string,
        blockIds: ids as number[],
        host: b.remote_host as string,
        port: port as number,
      },
    },
  };
}

/** NixlConnector's reply to a do_remote_decode request that finished on its length cap. */
export function nixlReplyParams(p: RemotePrefill): Record<string, unknown> {
  return {
    do_remote_prefill: true,
    do_remote_decode: false,
    remote_block_ids: p.blockIds,
    remote_engine_id: p.engineId,
    remote_request_id: p.requestId,
    remote_host: p.host,
    remote_port: p.port,
    tp_size: 1,
  };
}

function show(v: unknown): string {
  const text = JSON.stringify(v) ?? String(v);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}
