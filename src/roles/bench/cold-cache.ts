// --with-replay compares a live run with a simulation whose caches start empty; a stack that
// already holds blocks (an earlier run, warm-up traffic) makes that comparison unfair. Two checks:
// the router's index before the run (our frontend's GET /v1/index; other routers have none), and
// the first measured request, which on a cold cache can have no cached prompt tokens.
import { readResidency } from "../shared/stack/stack-truth.ts";
import type { RequestRecord } from "./send-request.ts";

/** A warning when the router's index lists blocks before the run; undefined when empty or unreadable. */
export async function warmIndexAtStart(baseUrl: string): Promise<string | undefined> {
  let blocks = 0;
  try {
    const doc = await readResidency(`${baseUrl}/v1/index`);
    for (const s of doc.sources) blocks += s.tiers.device.length + s.tiers.host.length + s.tiers.disk.length;
  } catch {
    return undefined; // no index to read: the first request is checked instead
  }
  return blocks > 0 ? `--with-replay: the stack's index already holds ${blocks} block(s) before the run, but the simulation starts cold; restart the stack (or bench a fresh one) for a fair comparison` : undefined;
}

/** A warning when the first measured request already found cached prompt tokens. */
export function warmFirstRequest(records: readonly RequestRecord[]): string | undefined {
  let first: RequestRecord | undefined;
  for (const r of records) if (first === undefined || r.sentMs < first.sentMs) first = r;
  const cached = first?.cachedTokens ?? 0;
  return cached > 0 ? `--with-replay: the first request already found ${cached} cached prompt token(s), so the stack's cache was not cold, but the simulation's is; restart the stack for a fair comparison` : undefined;
}
