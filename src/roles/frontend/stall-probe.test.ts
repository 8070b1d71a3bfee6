// A request that stalls on a worker, without a port: the worker's /health is asked (1 s deadline);
// no answer takes the worker out of routing at once while the request migrates and succeeds; an
// answer counts the stall toward --worker-eject-after as any failure; stalls on one worker while
// its probe is out share that probe. Workers are fake fetches keyed by host.
import { describe, expect, test } from "bun:test";
import { app as frontendApp, post, routingState, workerRecord } from "../../../test/routing/fake-fleet.ts";
import { waitFor } from "../../../test/harness.ts";
import type { FrontendApp } from "./http-app.ts";
import type { RoutingState } from "./routing-state.ts";
import { STALL_PROBE_TIMEOUT_MS } from "./stall-probe.ts";
import { type FetchLike, type GenerateBody } from "./worker-call.ts";

type Behaviour = (body: GenerateBody, signal: AbortSignal) => Promise<Response> | Response;

/** Accepts the request and never answers (until the frontend gives up on it). */
const hangs: Behaviour = (_b, signal) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
const serves: Behaviour = (b) =>
  new Response(
    [...Array.from({ length: b.max_tokens }, (_, i) => JSON.stringify({ token_id: 100 + i })), JSON.stringify({ finish_reason: "length", prompt_tokens: b.token_ids.length, cached_tokens: 0, host_loaded_tokens: 0, completion_tokens: b.max_tokens })].join("\n") + "\n",
  );

interface Fleet {
  state: RoutingState;
  app: FrontendApp;
  calls: string[];
  probes: { url: string; timeoutMs: number | undefined }[];
  metrics: () => Promise<string>;
  add: (id: string) => void;
}

/** Workers by id (host `<id>.test`); `health` says whether a worker's /health answers 200 in time, and `probeGate` holds every probe until it resolves. */
function fleet(workers: Record<string, Behaviour>, opts: { health: (id: string) => boolean; ejectAfter?: number; probeGate?: Promise<void> }): Fleet {
  const state = routingState("round-robin", { ejectAfter: opts.ejectAfter });
  const calls: string[] = [];
  const probes: Fleet["probes"] = [];
  const fake: FetchLike = async (url, init) => {
    const id = new URL(url).hostname.split(".")[0]!;
    calls.push(id);
    return workers[id]!(JSON.parse(String(init.body)) as GenerateBody, init.signal!);
  };
  const app = frontendApp(state, fake, {
    maxRequestBytes: 1 << 20,
    stallTimeoutMs: 40,
    failures: { migrationLimit: 1 },
    probeWorker: async (url, timeoutMs) => {
      probes.push({ url, timeoutMs });
      await opts.probeGate;
      return opts.health(new URL(url).hostname.split(".")[0]!);
    },
  });
  const add = (id: string) => void state.putWorker(workerRecord(id, { request_url: `http://${id}.test/v1/generate` }));
  const metrics = async () => (await app.fetch(new Request("http://frontend/metrics"))).text();
  return { state, app, calls, probes, metrics, add };
}

const cmpl = { model: "m", prompt: [1, 2, 3, 4, 5], max_tokens: 4 };

describe("a stalled request probes its worker's /health", () => {
  test("no answer: the worker leaves routing at once (not after --worker-eject-after stalls), and the request migrates and succeeds", async () => {
    const f = fleet({ a: hangs, b: serves }, { health: (id) => id !== "a", ejectAfter: 3 });
    try {
      f.add("a");
      const pending = f.app.fetch(post("/v1/completions", cmpl));
      await waitFor(() => f.calls.includes("a"), { what: "the request to reach worker a" });
      f.add("b"); // only now: the request could only have gone to a
      const res = await pending;
      expect(res.status).toBe(200);
      expect(res.headers.get("x-kvcr-worker")).toBe("b");
      expect(((await res.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens).toBe(4);
      expect(f.calls).toEqual(["a", "b"]);
      await waitFor(() => f.state.health.isEjected("a"), { what: "worker a to leave routing" });
      expect(f.probes).toEqual([{ url: "http://a.test/health", timeoutMs: STALL_PROBE_TIMEOUT_MS }]);
      const text = await f.metrics();
      expect(text).toContain('kvcr_frontend_stall_probes_total{outcome="failed"} 1');
      expect(text).toContain('kvcr_frontend_stall_probes_total{outcome="answered"} 0');
      expect(text).toContain('kvcr_frontend_worker_ejections_total{reason="stalled"} 1');
      expect(text).toContain('dynamo_frontend_model_migration_total{migration_type="new_request",model="m"} 1');
      // Later requests go to b alone.
      for (let i = 0; i < 3; i++) expect((await f.app.fetch(post("/v1/completions", cmpl))).headers.get("x-kvcr-worker")).toBe("b");
      expect(f.calls.filter((c) => c === "a")).toHaveLength(1);
    } finally {
      f.app.close?.();
    }
  });

  test("an answer: each stall counts toward --worker-eject-after as before, and the worker leaves routing only at the limit", async () => {
    const f = fleet({ a: hangs, b: serves }, { health: () => true, ejectAfter: 2 });
    try {
      f.add("a");
      f.add("b");
      // Round-robin: every other request starts on a, stalls, and migrates to b.
      const answered = () => f.metrics().then((t) => Number(/kvcr_frontend_stall_probes_total\{outcome="answered"\} (\d+)/.exec(t)?.[1]));
      for (let i = 0; i < 8 && (await answered()) < 1; i++) expect((await f.app.fetch(post("/v1/completions", cmpl))).status).toBe(200);
      await waitFor(async () => (await answered()) === 1, { what: "the first stall's probe to be answered" });
      expect(f.state.health.isEjected("a")).toBe(false); // one stall of two allowed
      for (let i = 0; i < 8 && !f.state.health.isEjected("a"); i++) {
        expect((await f.app.fetch(post("/v1/completions", cmpl))).status).toBe(200);
        await waitFor(async () => (await answered()) === f.calls.filter((c) => c === "a").length, { what: "each stall's probe to end" });
      }
      expect(f.state.health.isEjected("a")).toBe(true);
      const text = await f.metrics();
      expect(text).toContain('kvcr_frontend_stall_probes_total{outcome="answered"} 2');
      expect(text).toContain('kvcr_frontend_stall_probes_total{outcome="failed"} 0');
      expect(text).toContain('kvcr_frontend_worker_ejections_total{reason="failures"} 1');
      expect(text).toContain('kvcr_frontend_worker_ejections_total{reason="stalled"} 0');
    } finally {
      f.app.close?.();
    }
  });

  test("requests stalling on one worker while its probe is out share it; each stall still counts", async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const f = fleet({ a: hangs }, { health: () => true, ejectAfter: 3, probeGate: gate });
    try {
      f.add("a");
      // Only a exists: both stall, cannot migrate, and end 504.
      const both = [f.app.fetch(post("/v1/completions", cmpl)), f.app.fetch(post("/v1/completions", cmpl))];
      expect((await Promise.all(both)).map((r) => r.status)).toEqual([504, 504]);
      expect(f.probes).toHaveLength(1);
      open();
      await waitFor(async () => (await f.metrics()).includes('kvcr_frontend_stall_probes_total{outcome="answered"} 1'), { what: "the shared probe to end" });
      expect(f.state.health.isEjected("a")).toBe(false);
      expect((await f.app.fetch(post("/v1/completions", cmpl))).status).toBe(504); // the third stall in a row
      await waitFor(() => f.state.health.isEjected("a"), { what: "worker a ejected at its third stall" });
      expect(f.probes).toHaveLength(2);
    } finally {
      f.app.close?.();
    }
  });
});
