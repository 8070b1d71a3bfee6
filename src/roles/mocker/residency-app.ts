// The mocker's truth (docs/http-api.md, "Residency"): GET /v1/residency lists what each rank's
// engine really holds, in the shape the agent's snapshot and the frontend's index use, stamped with
// the last raw seq it reflects; POST /v1/residency/overlap gives, per rank, the blocks of a prompt
// it holds per tier, counted as the router counts overlap. Each rank is read between engine steps,
// when what it holds equals what its PUB has sent (as the state dump is).
import type { BlockHasher } from "../../core/kv/block-hash.ts";
import type { KvTier } from "../../core/kv/kv-events.ts";
import { BadRequest, openAiError, tokenIds } from "../../protocol/openai.ts";
import { prefixOverlap, residencyBlocks, type Residency, type ResidencyHolder } from "../../protocol/residency.ts";
import type { RankEngine } from "./rank-engine.ts";

export const RESIDENCY_PATH = "/v1/residency";
export const OVERLAP_PATH = "/v1/residency/overlap";

export interface ResidencyDeps {
  /** Engines by [worker][rank]. */
  ranks: readonly (readonly RankEngine[])[];
  workerIds: readonly string[];
  /** Each worker's request URL (its discovery record's). */
  requestUrl: string;
  blockSize: number;
  hasher: BlockHasher;
}

const MAX_QUERY_BLOCKS = 1 << 20;

/** One rank's residency as of now (call between steps: see `whenPublished`). */
export function rankResidency(rank: RankEngine, workerId: string, requestUrl?: string): ResidencyHolder {
  const resident = rank.engine.inspect().resident;
  const tier = (t: KvTier) => residencyBlocks(resident[t].map((h) => [h, rank.localHashes.get(t, h) ?? 0n] as const));
  const seq = rank.lastSeq;
  return {
    worker_id: workerId,
    dp_rank: rank.rank,
    ...(seq !== undefined ? { seq } : {}),
    ...(requestUrl !== undefined ? { url: requestUrl } : {}),
    requests: rank.engine.pendingRequests,
    tiers: { device: tier("device"), host: tier("host"), disk: [] },
  };
}

function consistent<T>(rank: RankEngine, read: () => T): Promise<T> {
  return new Promise((resolve) => rank.whenPublished(() => resolve(read())));
}

export async function residencyRoute(req: Request, deps: ResidencyDeps): Promise<Response> {
  if (req.method !== "GET") return openAiError(405, `use GET for ${RESIDENCY_PATH}`);
  const picked = pickRanks(new URL(req.url).searchParams, deps);
  if ("problem" in picked) return openAiError(picked.status, picked.problem);
  const sources = await Promise.all(picked.ranks.map((r) => consistent(r, () => rankResidency(r, deps.workerIds[r.worker]!, deps.requestUrl))));
  const body: Residency = { sources };
  return Response.json(body);
}

export async function overlapRoute(req: Request, deps: ResidencyDeps): Promise<Response> {
  if (req.method !== "POST") return openAiError(405, `use POST for ${OVERLAP_PATH}`);
  let body: unknown;
  try {
    body = await req.json();
  } catch (err) {
    return openAiError(400, `body is not valid JSON: ${(err as Error).message}`);
  }
  const hashes = queryHashes(body, deps);
  if (typeof hashes === "string") return openAiError(400, hashes, { param: hashes.split(":")[0] });
  const ranks = deps.ranks.flat();
  const rows = await Promise.all(
    ranks.map((r) =>
      consistent(r, () => {
        const resident = r.engine.inspect().resident;
        const device = new Set(resident.device);
        const host = new Set(resident.host);
        return { worker_id: deps.workerIds[r.worker]!, dp_rank: r.rank, ...prefixOverlap(hashes, { device: (h) => device.has(h), host: (h) => host.has(h), disk: () => false }) };
      }),
    ),
  );
  return Response.json({ block_size: deps.blockSize, ranks: rows });
}

/** The query's seq hashes: from `token_ids` (full blocks, hashed as the engine does) or `block_hashes`; a string is the problem. */
function queryHashes(body: unknown, deps: ResidencyDeps): bigint[] | string {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return "(body): expected {\"token_ids\": [...]} or {\"block_hashes\": [...]}";
  const b = body as Record<string, unknown>;
  for (const k of Object.keys(b)) if (k !== "token_ids" && k !== "block_hashes") return `${k}: unknown field; expected token_ids or block_hashes`;
  if ((b.token_ids === undefined) === (b.block_hashes === undefined)) return "(body): give exactly one of token_ids and block_hashes";
  if (b.token_ids !== undefined) {
    const ids = b.token_ids;
    if (!Array.isArray(ids) || ids.length > MAX_QUERY_BLOCKS * deps.blockSize) return "token_ids: expected an array of token ids";
    const checked = tokenIds(ids, "token_ids");
    if (checked instanceof BadRequest) return checked.message;
    return [...deps.hasher.sequenceHashes(checked, deps.blockSize)];
  }
  const list = b.block_hashes;
  if (!Array.isArray(list) || list.length > MAX_QUERY_BLOCKS) return "block_hashes: expected an array of decimal u64 strings";
  const out: bigint[] = [];
  for (let i = 0; i < list.length; i++) {
    const h: unknown = list[i];
    if (typeof h !== "string" || !/^(0|[1-9][0-9]{0,19})$/.test(h) || BigInt(h) > 0xffff_ffff_ffff_ffffn) return `block_hashes[${i}]: expected a u64 as a decimal string, got ${JSON.stringify(h)}`;
    out.push(BigInt(h));
  }
  return out;
}

type Picked = { ranks: RankEngine[] } | { problem: string; status: 400 | 404 };

function pickRanks(q: URLSearchParams, deps: ResidencyDeps): Picked {
  const index = (name: string): number | undefined | null => {
    const text = q.get(name);
    if (text === null) return undefined;
    return /^(0|[1-9][0-9]{0,8})$/.test(text) ? Number(text) : null;
  };
  const worker = index("worker");
  const rank = index("dp_rank");
  if (worker === null) return { problem: "worker: expected a non-negative integer (the worker's index in this process)", status: 400 };
  if (rank === null) return { problem: "dp_rank: expected a non-negative integer", status: 400 };
  const workers = worker === undefined ? deps.ranks : deps.ranks[worker] ? [deps.ranks[worker]] : undefined;
  if (!workers) return { problem: `unknown worker ${worker}; this process serves workers 0..${deps.ranks.length - 1}`, status: 404 };
  const ranks = workers.flatMap((w) => (rank === undefined ? [...w] : w[rank] ? [w[rank]] : []));
  if (rank !== undefined && ranks.length === 0) return { problem: `unknown dp_rank ${rank}`, status: 404 };
  return { ranks };
}
