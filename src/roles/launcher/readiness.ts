// `up`'s readiness probes (docs/up.md, "Stages and readiness") as functions that resolve when ready and throw the reason they are
// not: an HTTP 200 (agent /live, mocker /health), and the frontend's model list plus worker count.
// Each probe has its own 1 s timeout, so a hung child cannot stall the deadline.
import type { Readiness } from "./plan.ts";

export const PROBE_TIMEOUT_MS = 1_000;

async function get(url: string): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
  } catch (err) {
    const e = err as Error & { code?: string };
    throw new Error(e.name === "TimeoutError" ? `GET ${url}: no answer within ${PROBE_TIMEOUT_MS} ms` : `GET ${url}: ${e.code ?? e.message}`);
  }
  if (res.status !== 200) {
    const body = (await res.text().catch(() => "")).slice(0, 200);
    throw new Error(`GET ${url}: HTTP ${res.status}${body ? ` ${body}` : ""}`);
  }
  return res;
}

async function json(url: string): Promise<unknown> {
  const res = await get(url);
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`GET ${url}: not JSON: ${text.slice(0, 120)}`);
  }
}

function parsedOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Workers a frontend's /health reports: `instances` (ours, docs/http-api.md) or `workers`, as a
 * count or a list, since another frontend need not name it as ours does; undefined when it reports
 * neither (docs/DECISIONS.md: then /v1/models listing the model is enough).
 */
export function healthWorkerCount(body: unknown): number | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  for (const key of ["instances", "workers", "num_workers", "num_instances"]) {
    const v = (body as Record<string, unknown>)[key];
    if (typeof v === "number") return v;
    if (Array.isArray(v)) return v.length;
  }
  return undefined;
}

export function probeFor(r: Readiness): { what: string; probe: () => Promise<void> } {
  if (r.kind === "ok") return { what: `HTTP 200 from ${r.url}`, probe: async () => void (await get(r.url)) };
  return {
    what: `${r.modelsUrl} to list ${r.model}${r.workers > 0 ? ` and ${r.healthUrl} to count ${r.workers} worker(s)` : ""}`,
    probe: async () => {
      const models = (await json(r.modelsUrl)) as { data?: { id?: unknown }[] };
      const ids = Array.isArray(models?.data) ? models.data.map((m) => m?.id) : [];
      if (!ids.includes(r.model)) throw new Error(`${r.modelsUrl} lists ${JSON.stringify(ids)}, not ${r.model} yet`);
      if (r.workers === 0) return;
      // A router's /health may be plain text ("OK"): a 200 then says nothing of its workers, and the model list is the gate.
      const health = await (await get(r.healthUrl)).text();
      const count = healthWorkerCount(parsedOrUndefined(health));
      if (count !== undefined && count < r.workers) throw new Error(`${r.healthUrl} counts ${count} of ${r.workers} workers`);
    },
  };
}

/**
 * State-agent mode, after the frontend is ready: every raw PUB of a mocker has a subscriber whose
 * subscription matches its topic (the agent), read from the mocker's /metrics. Until then a first
 * request's KV events could be published to nobody (no replay by default) and miss the router.
 */
export function probeRawSubscribed(mockerUrl: string, ranks: number): { what: string; probe: () => Promise<void> } {
  const url = `${mockerUrl}/metrics`;
  return {
    what: `the agent subscribed to all ${ranks} raw stream(s) (${url} kvcr_mocker_raw_subscribers)`,
    probe: async () => {
      const text = await (await get(url)).text();
      const values = [...text.matchAll(/^kvcr_mocker_raw_subscribers\{[^}]*\} (\d+)$/gm)].map((m) => Number(m[1]));
      const subscribed = values.filter((v) => v > 0).length;
      if (subscribed < ranks) throw new Error(`${subscribed} of ${ranks} raw streams have a subscriber`);
    },
  };
}
