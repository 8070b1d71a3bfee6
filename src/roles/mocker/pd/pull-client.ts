// Decode side of the hand-over exchange (transfer-wire.ts): ask the named prefill worker for the
// blocks this rank lacks, and tell it when they have landed. Any failure (refused, unknown engine,
// no answer in time) is reported, so the caller recomputes the prompt locally.
import type { RemotePrefill } from "../../../protocol/kv-transfer-params.ts";
import type { BootstrapInfo } from "../../../protocol/dynamo/bootstrap.ts";
import { DONE_PATH, MEET_PATH, PULL_PATH, transferBaseUrl, type DoneBody, type MeetBody, type PullBody } from "./transfer-wire.ts";

export type PullOutcome = { ok: true } | { ok: false; reason: string };

export async function requestPull(remote: RemotePrefill, blockIds: number[], timeoutMs: number): Promise<PullOutcome> {
  const body: PullBody = { remote_engine_id: remote.engineId, remote_request_id: remote.requestId, remote_block_ids: blockIds };
  try {
    const res = await fetch(`${transferBaseUrl(remote.host, remote.port)}${PULL_PATH}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    if (res.ok) return { ok: true };
    return { ok: false, reason: `${res.status} ${errorMessage(text)}` };
  } catch (err) {
    return { ok: false, reason: (err as Error).message };
  }
}

/** SGLang's pairing: wait on the prefill's transfer port for the room's KV to be held. */
export async function meetRoom(info: BootstrapInfo, timeoutMs: number): Promise<PullOutcome> {
  const where = `room ${info.room} at ${info.host}:${info.port}`;
  const body: MeetBody = { bootstrap_room: info.room.toString() };
  try {
    const res = await fetch(`${transferBaseUrl(info.host, info.port)}${MEET_PATH}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs) });
    const text = await res.text();
    return res.ok ? { ok: true } : { ok: false, reason: `${where}: ${res.status} ${errorMessage(text)}` };
  } catch (err) {
    return { ok: false, reason: `${where}: ${(err as Error).message}` };
  }
}

/** Fire and forget: a lost notice only means the prefill side frees at its hold timeout. */
export function notifyDone(remote: RemotePrefill, timeoutMs: number): void {
  const body: DoneBody = { remote_engine_id: remote.engineId, remote_request_id: remote.requestId };
  fetch(`${transferBaseUrl(remote.host, remote.port)}${DONE_PATH}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  }).then(
    (res) => res.body?.cancel(),
    () => {},
  );
}

function errorMessage(text: string): string {
  try {
    const m = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    if (typeof m === "string") return m;
  } catch {
    // not JSON: the text itself
  }
  return text.slice(0, 200);
}
