// examples/multi-node.sh as a user runs it (its own etcd on free ports, the compiled binary as
// KVCR_MOCK): three nodes come up, the command after `--` sees the frontend route over all 12
// workers and the agent serve all 12 slots, and everything stops with the command's exit code.
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { pickFreePorts } from "../../src/transport/port-hold.ts";
import { etcdAvailable } from "../etcd.ts";
import { REPO_ROOT, runCli, tempDir } from "../harness.ts";
import { compiledBinary } from "./compiled.ts";

const CHECK = `
  const health = await (await fetch(process.env.KVCR_FRONTEND_URL + "/health")).json();
  const slots = await (await fetch(process.env.KVCR_AGENT_URL + "/v1/slots")).json();
  const hosts = [...new Set(slots.map((s) => s.raw_endpoint.split(":")[1]))].sort();
  console.log("instances", health.instances, "active", slots.filter((s) => s.state === "active").length, "hosts", hosts.join(" "));
  process.exit(7);
`;

describe.skipIf(!etcdAvailable())("examples/multi-node.sh", () => {
  test("three nodes on one etcd, the command runs against them, its exit code is kept", async () => {
    using dir = tempDir("kvcr-mn-example-");
    const bin = await compiledBinary();
    // The script starts etcd on ports it is given: two below the kernel's ephemeral range, where
    // no port-0 socket can take them before etcd binds them.
    const [etcdPort, etcdPeerPort] = pickFreePorts("127.0.0.1", 2);
    const r = await runCli(["--", process.execPath, "-e", CHECK], {
      bin: join(REPO_ROOT, "examples/multi-node.sh"),
      cwd: dir.path,
      timeoutMs: 90_000,
      env: { KVCR_MOCK: bin, ETCD_PORT: String(etcdPort), ETCD_PEER_PORT: String(etcdPeerPort), HTTP_PORT: "0", TMPDIR: dir.path, ETCD_ENDPOINTS: "" },
    });
    expect(r.stdout).toContain("instances 12 active 12 hosts //127.0.0.2 //127.0.0.3 //127.0.0.4");
    expect(r.exitCode).toBe(7);
  }, 120_000);
});
