// The hand-over exchange on a prefill worker's transfer port: `pull` names the engine, request and
// blocks a decode worker will read (block count, or 404 when not held); `done` when its load has
// landed, to free them; `meet` waits for the prefill of a bootstrap room (SGLang's pairing of the
// two legs, sent at once) and answers once its KV is held. The bytes are modelled on the decode
// side's clock, never sent.

export const PULL_PATH = "/v1/kv_transfer/pull";
export const DONE_PATH = "/v1/kv_transfer/done";
export const MEET_PATH = "/v1/kv_transfer/meet";

/** A decode leg's room, as decimal digits (a u64 does not survive a JSON number). */
export interface MeetBody {
  bootstrap_room: string;
}

export function meetBodyProblem(b: unknown): string | undefined {
  if (typeof b !== "object" || b === null || Array.isArray(b)) return "body must be a JSON object";
  const room = (b as Record<string, unknown>).bootstrap_room;
  return typeof room === "string" && /^[0-9]{1,20}$/.test(room) && BigInt(room) < 1n << 64n ? undefined : "bootstrap_room: expected a u64 as decimal digits";
}

export interface PullBody {
  remote_engine_id: string;
  remote_request_id: string;
  remote_block_ids: number[];
}

export type DoneBody = Omit<PullBody, "remote_block_ids">;

/** The body's problem naming the field, or undefined. */
export function pullBodyProblem(b: unknown, withBlocks: boolean): string | undefined {
  if (typeof b !== "object" || b === null || Array.isArray(b)) return "body must be a JSON object";
  const o = b as Record<string, unknown>;
  for (const key of ["remote_engine_id", "remote_request_id"]) if (typeof o[key] !== "string" || o[key] === "") return `${key}: expected a non-empty string`;
  if (!withBlocks) return undefined;
  const ids = o.remote_block_ids;
  if (!Array.isArray(ids) || ids.some((x) => !Number.isInteger(x) || x < 0)) return "remote_block_ids: expected an array of block ids (integers ≥ 0)";
  return undefined;
}

/** http://host:port of a transfer endpoint (IPv6 bracketed). */
export function transferBaseUrl(host: string, port: number): string {
  return `http://${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}:${port}`;
}
