// Reading a stack's truth and its router's index over HTTP, for audits and fault schedules (bench,
// up): each mocker's `GET /v1/residency`, the frontend's `GET /v1/index`, and which mocker serves
// which worker. Mockers come from a fixed list (--mocker-urls, up's processes) or through the
// frontend's index, whose holders carry their worker's request URL.
import { checkRecord } from "../../../protocol/records.ts";
import { ResidencySchema, type Residency } from "../../../protocol/residency.ts";

const READ_TIMEOUT_MS = 5_000;

/** `http://h:p/v1/generate` (a worker record's request URL) or `http://h:p/` → `http://h:p`. */
export function mockerBase(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url.replace(/\/+$/, "");
  }
}

/** GETs a residency document (`/v1/residency`, `/v1/index`); throws with the URL and the problem. */
export async function readResidency(url: string, signal?: AbortSignal): Promise<Residency> {
  const res = await fetch(url, { signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(READ_TIMEOUT_MS)]) : AbortSignal.timeout(READ_TIMEOUT_MS) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status} ${text.slice(0, 160)}`);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new Error(`${url}: not JSON: ${text.slice(0, 120)}`);
  }
  const r = checkRecord(ResidencySchema, doc);
  if (!r.ok) throw new Error(`${url}: not a residency document (${r.problem})`);
  return r.value;
}

/** Where a stack's mockers are: a fixed list of base URLs, or the frontend's index (re-read on every call). */
export interface StackEndpoints {
  /** The frontend (its `/v1/index`); undefined when the router has none to read. */
  indexUrl?: string;
  /** Fixed mocker base URLs, in stack order; undefined = found through indexUrl. */
  mockerUrls?: readonly string[];
}

/** The mockers' base URLs in stack order: the fixed list, or the index's holders in worker-id order. */
export async function mockerUrlsOf(ends: StackEndpoints, index?: Residency): Promise<string[]> {
  if (ends.mockerUrls) return ends.mockerUrls.map(mockerBase);
  if (!ends.indexUrl) return [];
  const doc = index ?? (await readResidency(`${ends.indexUrl}/v1/index`));
  const out: string[] = [];
  for (const s of doc.sources) if (s.url !== undefined && !out.includes(mockerBase(s.url))) out.push(mockerBase(s.url));
  return out;
}

/** Each mocker's `GET /v1/residency`, in order; undefined for one that does not answer (killed, restarting). */
export function readTruths(mockers: readonly string[]): Promise<(Residency | undefined)[]> {
  return Promise.all(mockers.map((m) => readResidency(`${m}/v1/residency`).catch(() => undefined)));
}

/** One worker of the stack: its id and its mocker. */
export interface StackWorker {
  workerId: string;
  mocker: string;
}

/**
 * The stack's workers in order: mockers in stack order, each one's workers as its residency lists
 * them (its worker order). `complete` is false when a mocker did not answer (killed, restarting):
 * its workers are missing, and positions after them shift.
 */
export async function stackWorkers(mockers: readonly string[]): Promise<{ workers: StackWorker[]; complete: boolean }> {
  const docs = await readTruths(mockers);
  const workers: StackWorker[] = [];
  docs.forEach((doc, i) => {
    for (const s of doc?.sources ?? []) if (!workers.some((w) => w.workerId === s.worker_id)) workers.push({ workerId: s.worker_id, mocker: mockers[i]! });
  });
  return { workers, complete: docs.every((d) => d !== undefined) };
}
