// up --frontends N: N frontend replicas on consecutive ports (frontend, frontend-1, …), each told
// the replica sync flags and the NATS URL; the nats-server child up adds when it starts one; where
// up finds nats-server, and what it says without one.
import { describe, expect, test } from "bun:test";
import { commonOptions } from "../../config/common.ts";
import { frontendOptions } from "../../config/frontend.ts";
import { loadConfig } from "../../config/load.ts";
import { upOptions, upProblems, type UpConfig } from "../../config/up.ts";
import { ConfigError } from "../../lib/errors.ts";
import { thrownBy } from "../../../test/harness.ts";
import { findNatsServer, natsProcessSpec } from "./nats-process.ts";
import { plan, type PlanContext } from "./plan.ts";
import { choosePorts } from "./start.ts";

const up = (...argv: string[]): UpConfig => loadConfig({ ...upOptions, ...commonOptions }, { argv, env: {} }, upProblems).config;
const ctx = (frontends: number[], natsUrl?: string): PlanContext => ({ self: ["/bin/kvcr"], ports: { agent: 9091, frontend: frontends[0]!, frontends, mockers: [7000] }, discoveryDir: "/d", natsUrl });
const frontendConfigOf = (argv: string[]) => loadConfig({ ...frontendOptions, ...commonOptions }, { argv: argv.slice(2), env: {} }).config;

describe("up --frontends", () => {
  test("replicas on their ports, named frontend, frontend-1, …; the URLs listed first to last", () => {
    const p = plan(up("--frontends", "3"), ctx([8000, 8001, 8002]));
    const fes = p.processes.filter((s) => s.role === "frontend");
    expect(fes.map((s) => [s.name, s.url, frontendConfigOf(s.argv).httpPort])).toEqual([
      ["frontend", "http://127.0.0.1:8000", 8000],
      ["frontend-1", "http://127.0.0.1:8001", 8001],
      ["frontend-2", "http://127.0.0.1:8002", 8002],
    ]);
    expect([p.frontendUrl, p.frontendUrls]).toEqual(["http://127.0.0.1:8000", ["http://127.0.0.1:8000", "http://127.0.0.1:8001", "http://127.0.0.1:8002"]]);
    // Without sync the replicas route on their own.
    expect(fes.map((s) => frontendConfigOf(s.argv).routerReplicaSync)).toEqual([false, false, false]);
  });

  test("with --router-replica-sync every replica syncs over the stack's NATS URL, with the timeout given", () => {
    const p = plan(up("--frontends", "2", "--router-replica-sync", "--router-replica-timeout", "3"), ctx([8000, 8001], "nats://127.0.0.1:4333"));
    for (const s of p.processes.filter((x) => x.role === "frontend")) {
      expect(frontendConfigOf(s.argv)).toMatchObject({ routerReplicaSync: true, natsUrl: "nats://127.0.0.1:4333", routerReplicaTimeout: 3 });
    }
  });

  test("--nats-url: every replica syncs over it, and up picks no ports for a server of its own", () => {
    const config = up("--frontends", "2", "--router-replica-sync", "--nats-url", "nats://10.0.0.5:4222", "--http-port", "0", "--agent-port", "0");
    const p = plan(config, ctx([8000, 8001]));
    expect(p.processes.filter((x) => x.role === "frontend").map((x) => frontendConfigOf(x.argv).natsUrl)).toEqual(["nats://10.0.0.5:4222", "nats://10.0.0.5:4222"]);
    const roles = new Set(["agent", "mockers", "frontend"]);
    expect(choosePorts(config, roles).nats).toBeUndefined();
    const own = choosePorts(up("--frontends", "3", "--router-replica-sync", "--http-port", "0", "--agent-port", "0"), roles);
    expect(own.nats).toBeDefined();
    expect(own.frontends).toHaveLength(3);
    expect(new Set([own.agent, ...own.frontends!, ...own.mockers, own.nats!.client, own.nats!.monitor]).size).toBe(7); // all distinct
  });

  test("refused: --frontend-cmd with several replicas, ports past 65535, a --nats-url that is not nats://", () => {
    const problems = (...argv: string[]) => [...thrownBy(ConfigError, () => up(...argv)).problems];
    expect(problems("--frontends", "2", "--frontend-cmd", "x {port}")).toEqual(["--frontends: 2 replicas run kvcr-mock's own frontend; --frontend-cmd runs one external frontend (give one or the other)"]);
    expect(problems("--frontends", "3", "--http-port", "65534")).toEqual(["--frontends: 3 ports from --http-port 65534 exceed port 65535"]);
    expect(problems("--router-replica-sync", "--nats-url", "http://x:1")).toEqual(['--nats-url (or NATS_SERVER): "http://x:1": expected the nats:// scheme']);
  });
});

describe("nats-server for the stack", () => {
  test("found on PATH or in /usr/sbin (Debian's place, often not on PATH); missing: undefined", () => {
    expect(findNatsServer({ PATH: "/opt/x:/opt/nats" }, (p) => p === "/opt/nats/nats-server")).toBe("/opt/nats/nats-server");
    expect(findNatsServer({ PATH: "/bin" }, (p) => p === "/usr/sbin/nats-server")).toBe("/usr/sbin/nats-server");
    expect(findNatsServer({ PATH: "/bin" }, () => false)).toBeUndefined();
  });

  test("its child: bound on the stack's host, ready and alive when its monitoring /healthz answers", () => {
    const s = natsProcessSpec("/usr/sbin/nats-server", "0.0.0.0", "127.0.0.1", { client: 4300, monitor: 4301 }, 60);
    expect(s.argv).toEqual(["/usr/sbin/nats-server", "-a", "0.0.0.0", "-p", "4300", "-m", "4301"]);
    expect([s.name, s.url, s.readiness, s.livenessUrl]).toEqual(["nats", "nats://127.0.0.1:4300", { kind: "ok", url: "http://127.0.0.1:4301/healthz" }, "http://127.0.0.1:4301/healthz"]);
  });
});
