// The agent's HTTP app called without a port (app.fetch), and the static source file reader.
import { describe, expect, test } from "bun:test";
import { ConfigError } from "../../lib/errors.ts";
import { createLogger } from "../../lib/logger.ts";
import { createBlockHasher } from "../../lib/xxh3.ts";
import { AgentSnapshotSchema } from "../../protocol/agent-snapshot.ts";
import { runCli, thrownBy } from "../../../test/harness.ts";
import * as v from "valibot";
import { KvStateAgent, type AgentOptions } from "./agent.ts";
import { createAgentApp } from "./http-app.ts";
import { RouterEventOutbound } from "./outbound.ts";
import { checkSourceIntent, readStaticSources } from "./sources.ts";
import type { DiscoveryStore } from "../../discovery/store.ts";

const logger = createLogger({ level: "silent" });
const owner = `${"ab".repeat(16)}:${"cd".repeat(16)}/${"0".repeat(16)}/${"0".repeat(31)}1`;
const source = { cache_owner_id: owner, worker_id: "w", dp_rank: 0, block_size: 4, ingress_protocol: "vllm_residency_v1", raw_endpoint: "tcp://127.0.0.1:9", raw_topic: "" };

async function withApp(
  fn: (fetch: (path: string, init?: RequestInit) => Promise<Response>) => Promise<void>,
  opts: Partial<Pick<AgentOptions, "maxSlots" | "slotChanged">> = {},
): Promise<void> {
  await using outbound = new RouterEventOutbound("127.0.0.1", 0, logger);
  const agent = new KvStateAgent({ maxSlots: 2, retentionMs: 1000, replayTimeoutMs: 1000, logger, hasher: createBlockHasher(), outbound, ...opts });
  try {
    const app = createAgentApp(agent, () => true);
    await fn((path, init) => app.fetch(new Request(`http://agent${path}`, init)));
  } finally {
    agent.close();
  }
}

describe("agent HTTP app", () => {
  test("live, health, slots, snapshot (to its schema) and metrics answer on an agent with no slots", async () => {
    await withApp(async (get) => {
      expect((await get("/live")).status).toBe(200);
      expect(await (await get("/health")).json()).toEqual({
        healthy: true, status: "healthy", slots: { total: 0, active: 0, detached: 0, failed: 0, quarantined: 0, degraded: 0 }, capacity_rejected_total: 0,
        raw_gaps_total: 0, raw_batches_recovered_total: 0, raw_dropped_batches_total: 0, raw_replay_out_of_range_total: 0,
        state_dumps_applied_total: 0, oversize_payloads_total: 0, outbound_cursor: 0,
      });
      expect(await (await get("/v1/slots")).json()).toEqual([]);
      expect(v.safeParse(AgentSnapshotSchema, await (await get("/v1/snapshot")).json()).success).toBe(true);
      const metrics = await (await get("/metrics")).text();
      expect(metrics).toContain("# TYPE kvcr_agent_ingest_lag_seconds histogram");
      expect(metrics).toContain('kvcr_agent_ingest_lag_seconds_bucket{le="+Inf"} 0');
      expect(metrics).toContain('kvcr_agent_slot_transitions_total{state="active"} 0');
    });
  });

  test("with a discovery store, a failed slot still makes /health 503 (and healthy discovery 200)", async () => {
    await using outbound = new RouterEventOutbound("127.0.0.1", 0, logger);
    const agent = new KvStateAgent({ maxSlots: 2, retentionMs: 1000, replayTimeoutMs: 1000, logger, hasher: createBlockHasher(), outbound });
    try {
      // A store that answers: only its status is read for /health.
      const discovery = { backend: "file", status: () => ({ backend: "file", connected: true, reconnects: 0, leaseRegrants: 0, watchResyncs: 0 }) } as unknown as DiscoveryStore;
      const app = createAgentApp(agent, () => true, discovery);
      const health = () => app.fetch(new Request("http://agent/health"));
      expect((await health()).status).toBe(200);
      // Two live intents for one cache owner from two workers: the owner's slot fails (ambiguous).
      const intent = checkSourceIntent(source);
      if (!intent.ok) throw new Error(intent.problem);
      agent.putSource("static:a", intent.value);
      agent.putSource("static:b", { ...intent.value, worker_id: "w2", raw_endpoint: "tcp://127.0.0.1:10" });
      const res = await health();
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ healthy: false, status: "unhealthy", slots: { total: 1, failed: 1 }, discovery: { backend: "file", connected: true, degraded: false } });
    } finally {
      agent.close();
    }
  });

  test("a handler that throws gets 500 naming the error", async () => {
    const broken = { slotViews: () => { throw new Error("table gone"); } } as unknown as KvStateAgent;
    const res = await createAgentApp(broken, () => true).fetch(new Request("http://agent/v1/slots"));
    expect(res.status).toBe(500);
    expect(await res.text()).toContain("internal error: table gone");
  });

  test("an unknown route gets 404 naming the routes", async () => {
    await withApp(async (get) => {
      const missing = await get("/nope");
      expect(missing.status).toBe(404);
      expect(await missing.text()).toContain("/v1/snapshot");
    });
  });

  test("a known route with the wrong method gets 405", async () => {
    await withApp(async (get) => {
      expect((await get("/v1/slots", { method: "POST" })).status).toBe(405);
    });
  });

  describe("POST and DELETE /v1/sources", () => {
    const post = (get: (path: string, init?: RequestInit) => Promise<Response>, body: string) => get("/v1/sources", { method: "POST", body });

    test("a new source gets 201 and an active slot", async () => {
      await withApp(async (get) => {
        const added = await post(get, JSON.stringify(source));
        expect(added.status).toBe(201);
        expect(await added.json()).toEqual({ status: "added", cache_owner_id: owner });
        const slots = (await (await get("/v1/slots")).json()) as { state: string; raw_topic: string }[];
        expect(slots).toMatchObject([{ state: "active", raw_topic: "" }]);
        expect(await (await get("/metrics")).text()).toContain('kvcr_agent_slot_transitions_total{state="active"} 1');
      });
    });

    test("a duplicate source gets 409", async () => {
      await withApp(async (get) => {
        await post(get, JSON.stringify(source));
        expect((await post(get, JSON.stringify(source))).status).toBe(409);
      });
    });

    test("beyond --max-slots a new owner gets 409 naming the capacity and is not registered", async () => {
      await withApp(
        async (get) => {
          expect((await post(get, JSON.stringify(source))).status).toBe(201);
          const other = { ...source, cache_owner_id: owner.replace(/1$/, "2") };
          const full = await post(get, JSON.stringify(other));
          expect(full.status).toBe(409);
          const body = (await full.json()) as { error: { message: string; code: unknown } };
          expect(body.error.message).toContain("--max-slots 1");
          expect(await (await get("/v1/slots")).json()).toMatchObject([{ cache_owner_id: owner }]);
          expect((await get(`/v1/sources/${encodeURIComponent(other.cache_owner_id)}`, { method: "DELETE" })).status).toBe(404);
          // Nothing waits for capacity: freeing the slot's source does not admit the refused owner.
          expect((await get(`/v1/sources/${encodeURIComponent(owner)}`, { method: "DELETE" })).status).toBe(200);
          expect((await post(get, JSON.stringify(other))).status).toBe(409); // the detached slot is retained
        },
        { maxSlots: 1 },
      );
    });

    test("an internal failure while attaching gets 500 and leaves nothing registered", async () => {
      let failing = true;
      await withApp(
        async (get) => {
          const failed = await post(get, JSON.stringify(source));
          expect(failed.status).toBe(500);
          expect(await failed.text()).toContain("not registered");
          expect(await (await get("/v1/slots")).json()).toEqual([]);
          expect((await get(`/v1/sources/${encodeURIComponent(owner)}`, { method: "DELETE" })).status).toBe(404);
          failing = false;
          expect((await post(get, JSON.stringify(source))).status).toBe(201);
        },
        {
          slotChanged: () => {
            if (failing) throw new Error("attachment record store down");
          },
        },
      );
    });

    test("an invalid source gets 400 naming the field", async () => {
      await withApp(async (get) => {
        const bad = await post(get, JSON.stringify({ ...source, cache_owner_id: "x" }));
        expect(bad.status).toBe(400);
        expect(await bad.text()).toContain("cache_owner_id");
      });
    });

    test("a body that is not JSON gets 400", async () => {
      await withApp(async (get) => {
        expect((await post(get, "{")).status).toBe(400);
      });
    });

    test("an oversized body gets 413, also chunked (no content-length) and read only up to the cap", async () => {
      await withApp(async (get) => {
        expect((await post(get, JSON.stringify({ ...source, pad: "x".repeat(70_000) }))).status).toBe(413);
        let pulled = 0;
        const endless = new ReadableStream<Uint8Array>({
          pull(c) {
            pulled++;
            c.enqueue(new Uint8Array(16 * 1024).fill(32));
          },
        });
        const res = await get("/v1/sources", { method: "POST", body: endless, headers: { "content-type": "application/json" } });
        expect(res.status).toBe(413);
        expect(pulled).toBeLessThan(16);
      });
    });

    test("the body cap is 64 KiB: one byte more gets 413, exactly 64 KiB is read", async () => {
      await withApp(async (get) => {
        const sized = (n: number) => {
          const text = JSON.stringify({ ...source, pad: "" });
          return text.replace('"pad":""', `"pad":"${"x".repeat(n - text.length)}"`);
        };
        expect(sized(65_537)).toHaveLength(65_537);
        expect((await post(get, sized(65_537))).status).toBe(413);
        expect((await post(get, sized(65_536))).status).toBe(201);
      });
    });

    test("DELETE removes a runtime source once: 200, then 404", async () => {
      await withApp(async (get) => {
        await post(get, JSON.stringify(source));
        const path = `/v1/sources/${encodeURIComponent(owner)}`;
        expect((await get(path, { method: "DELETE" })).status).toBe(200);
        expect((await get(path, { method: "DELETE" })).status).toBe(404);
      });
    });

    test("DELETE with a malformed percent-encoded id gets 400", async () => {
      await withApp(async (get) => {
        expect((await get("/v1/sources/%E0%A4%A", { method: "DELETE" })).status).toBe(400);
      });
    });
  });
});

describe("readStaticSources", () => {
  /** A YAML list of one good source (as inline JSON) and one with a bad dp_rank. */
  const goodAndBad = () => readStaticSources("s.yaml", () => `- ${JSON.stringify(source)}\n- { cache_owner_id: "${owner}", worker_id: w, dp_rank: -1 }\n`);

  test("a list's good entries become sources, incarnation 0 by default", () => {
    const r = goodAndBad();
    expect(r.sources).toHaveLength(1);
    expect(r.sources[0]!.incarnation).toBe(0);
  });

  test("a bad entry is a warning naming its index and field", () => {
    expect(goodAndBad().warnings).toEqual([expect.stringMatching(/entry 1 ignored: dp_rank: /)]);
  });

  test("unreadable, unparseable or non-list files are config errors", () => {
    expect(thrownBy(ConfigError, () => readStaticSources("x.json", () => { throw new Error("ENOENT"); })).message).toContain("cannot read x.json");
    expect(thrownBy(ConfigError, () => readStaticSources("x.json", () => "{")).message).toContain("not valid JSON");
    expect(thrownBy(ConfigError, () => readStaticSources("x.yaml", () => "a: 1")).message).toContain("must hold a list");
  });
});

describe("kvcr-mock agent at the process edge", () => {
  test("a missing --static-sources file exits 2 naming it", async () => {
    const missing = await runCli(["agent", "--port", "0", "--static-sources", "/nonexistent/sources.json"]);
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toContain("--static-sources: cannot read /nonexistent/sources.json");
  });

  test("a bad flag exits 2 naming it", async () => {
    const flag = await runCli(["agent", "--max-slots", "0"]);
    expect(flag.exitCode).toBe(2);
    expect(flag.stderr).toContain("--max-slots");
  });
});
