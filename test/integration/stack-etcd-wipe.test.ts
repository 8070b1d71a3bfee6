// A frontend and a mocker on etcd, etcd wiped and started empty on the same port: the mocker's
// worker is put back, and a mocker that registers only after the wipe is routed to, although
// etcd's revisions count from 1 again below where the frontend's watches had got to.
import { describe, expect, test } from "bun:test";
import { b64, EtcdClient } from "../../src/discovery/etcd-client.ts";
import { startFrontend, type FrontendHandle } from "../../src/roles/frontend/start.ts";
import { startMocker, type MockerHandle } from "../../src/roles/mocker/index.ts";
import { etcdAvailable, type EtcdServer, useEtcd } from "../etcd.ts";
import { waitFor, withTimeout } from "../harness.ts";
import { frontendConfig, logger } from "./frontend-kit.ts";
import { mockerConfig } from "./mocker-kit.ts";

const hasEtcd = etcdAvailable();

describe.skipIf(!hasEtcd)("stack on etcd through an etcd wipe", () => {
  let etcd!: EtcdServer;
  useEtcd((s) => (etcd = s));

  test("a mocker registered after the wipe is routed to; the one from before is put back", async () => {
    const discovery = ["--discovery-backend", "etcd", "--etcd-endpoints", etcd.endpoint, "--namespace", "wipe", "--discovery-lease-ttl", "1"];
    const mocker = (): Promise<MockerHandle> => startMocker(mockerConfig(["--num-workers", "1", "--block-size", "4", "--model-name", "m", "--speedup-ratio", "0", ...discovery]), { logger, env: {} });
    const finished = async (m: MockerHandle) => Number(/^kvcr_mocker_finished_requests_total(?:\{[^}]*\})? (\d+)$/m.exec(await (await fetch(`${m.httpUrl}/metrics`)).text())?.[1] ?? 0);
    const handles: { close(): Promise<void> }[] = [];
    try {
      // etcd's revision well past where an emptied etcd starts: the frontend's watches start there.
      const raw = new EtcdClient({ endpoints: [etcd.endpoint] });
      for (let i = 0; i < 30; i++) await raw.call("/v3/kv/put", { key: b64("unrelated"), value: b64(String(i)) });
      const before = await mocker();
      handles.push(before);
      await withTimeout(before.ready, 10_000, "the first mocker's registration");
      const fe: FrontendHandle = await startFrontend(frontendConfig(["--http-port", "0", "--router-mode", "round-robin", ...discovery]), { logger });
      handles.push(fe);
      await waitFor(() => fe.state.workerCount === 1, { what: "the frontend to route the first worker", timeoutMs: 10_000 });

      await etcd.wipe();
      const after = await mocker();
      handles.push(after);
      await withTimeout(after.ready, 10_000, "the second mocker's registration");
      await waitFor(() => fe.state.workerCount === 2, { what: "the frontend to route the worker registered after the wipe", timeoutMs: 10_000 });

      for (let i = 0; i < 4; i++) {
        const res = await fetch(`${fe.url}/v1/completions`, { method: "POST", body: JSON.stringify({ model: "m", prompt: [1, 2, 3, 4, 5, i], max_tokens: 1 }) });
        expect(res.status).toBe(200);
        await res.text();
      }
      expect(await finished(after)).toBeGreaterThan(0);
      expect(await finished(before)).toBeGreaterThan(0);
      expect(await (await fetch(`${fe.url}/metrics`)).text()).toMatch(/kvcr_discovery_watch_resyncs_total\{backend="etcd"\} [1-9]/);
      expect(await (await fetch(`${before.httpUrl}/metrics`)).text()).toMatch(/kvcr_discovery_lease_regrants_total\{backend="etcd"\} [1-9]/);
    } finally {
      for (const h of handles.reverse()) await h.close();
    }
  }, 60_000);
});
