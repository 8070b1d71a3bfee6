// The state-dump contract between a raw publisher and a consumer that lost its place (the
// agent): `GET {state_dump_url}` answers one raw payload (the live stream's encoding) storing every
// resident block, parents first, and names in a header the last raw seq it reflects, so the
// consumer continues live from seq + 1. docs/http-api.md, "State dump". vLLM has no such endpoint:
// an intent without `state_dump_url` means none.

/** Response header: the last raw seq the dump reflects, decimal; -1 when nothing was published yet. */
export const DUMP_SEQ_HEADER = "x-kvcr-raw-seq";
export const DUMP_CONTENT_TYPE = "application/vnd.msgpack";
export const DUMP_PATH = "/v1/kv-dump";

/** The dump URL of (worker, rank) on a mocker whose HTTP base URL is `httpUrl`. */
export function stateDumpUrl(httpUrl: string, worker: number, dpRank: number): string {
  return `${httpUrl.replace(/\/$/, "")}${DUMP_PATH}?worker=${worker}&dp_rank=${dpRank}`;
}

/** The seq header's value as a number ≥ -1, or a problem. */
export function parseDumpSeq(value: string | null): number | string {
  if (value === null) return `missing ${DUMP_SEQ_HEADER} header`;
  if (!/^(-1|0|[1-9][0-9]{0,15})$/.test(value)) return `bad ${DUMP_SEQ_HEADER} header ${JSON.stringify(value.slice(0, 40))}`;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : `${DUMP_SEQ_HEADER} ${value} is beyond 2^53`;
}
