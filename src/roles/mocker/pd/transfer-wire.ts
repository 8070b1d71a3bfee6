// The hand-over exchange between mocker processes, on a prefill worker's transfer port: a decode
// worker POSTs `pull` naming the engine, request and blocks it will read (answered with the block
// count, or 404 when they are not held), then `done` once its load has landed, so the prefill side
// frees them. The bytes themselves are modelled on the decode side's clock, never sent.

export const PULL_PATH = "/v1/kv_transfer/pull";
export const DONE_PATH = "/v1/kv_transfer/done";

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
