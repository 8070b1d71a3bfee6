// One state-dump fetch for a slot (protocol/kv-events/state-dump.ts): GET the publisher's dump URL
// with a deadline, read at most `maxBytes` of body (the one payload limit also holds here), and
// return the payload with the raw seq it reflects, or why not. Never throws.
import { readCappedBytes } from "../../lib/read-capped.ts";
import { DUMP_SEQ_HEADER, parseDumpSeq } from "../../protocol/kv-events/state-dump.ts";

export type DumpFetch = { ok: true; seq: number; payload: Uint8Array } | { ok: false; problem: string; oversize: boolean };

export interface DumpFetchOptions {
  maxBytes: number;
  timeoutMs: number;
  fetch?: ((url: string, init: RequestInit) => Promise<Response>) | undefined;
  /** Gives up at once (the slot stopped). */
  signal?: AbortSignal;
}

export async function fetchStateDump(url: string, opts: DumpFetchOptions): Promise<DumpFetch> {
  const fail = (problem: string, oversize = false): DumpFetch => ({ ok: false, problem, oversize });
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), opts.timeoutMs);
  const stop = () => ac.abort();
  opts.signal?.addEventListener("abort", stop, { once: true });
  try {
    const res = await (opts.fetch ?? fetch)(url, { method: "GET", signal: ac.signal });
    if (res.status !== 200) {
      await res.body?.cancel().catch(() => {});
      return fail(`GET ${url} answered ${res.status}`);
    }
    const seq = parseDumpSeq(res.headers.get(DUMP_SEQ_HEADER));
    if (typeof seq === "string") {
      await res.body?.cancel().catch(() => {});
      return fail(`GET ${url}: ${seq}`);
    }
    const declared = Number(res.headers.get("content-length") ?? "NaN");
    if (declared > opts.maxBytes) {
      await res.body?.cancel().catch(() => {});
      return fail(`dump of ${declared} bytes exceeds --max-event-payload-bytes ${opts.maxBytes}`, true);
    }
    const body = res.body ? await readCappedBytes(res.body.getReader(), opts.maxBytes) : new Uint8Array(0);
    if (body === undefined) return fail(`dump exceeds --max-event-payload-bytes ${opts.maxBytes}`, true);
    return { ok: true, seq, payload: body };
  } catch (err) {
    if (opts.signal?.aborted) return fail("cancelled");
    return fail(ac.signal.aborted ? `GET ${url}: no answer within ${opts.timeoutMs} ms` : `GET ${url}: ${(err as Error).message}`);
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener("abort", stop);
  }
}
