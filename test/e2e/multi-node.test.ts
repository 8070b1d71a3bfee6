// Three "nodes" on one machine (loopback addresses 127.0.0.2/3/4), one real etcd, the compiled
// binary (docs/up.md, Several hosts): node A runs `up --roles agent,frontend,mockers`, nodes B and C
// `up --roles mockers` with their own --host, raw host and --cache-slot-base; 2 mocker processes ×
// 2 workers each. Every slot attaches with its node's raw host, routing spans all nodes, an
// overlapping slot range is refused naming both owners, and killing node B's `up` retracts exactly
// B's workers and slots.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { etcdAvailable, startEtcd, type EtcdServer } from "../etcd.ts";
import { pidAlive, runCli, spawnProcess, tempDir, waitFor, type ChildProcess } from "../harness.ts";
import { compiledBinary } from "./compiled.ts";

const hasEtcd = etcdAvailable();
const NODES = { A: { host: "127.0.0.2", base: 0 }, B: { host: "127.0.0.3", base: 4 }, C: { host: "127.0.0.4", base: 8 } } as const;
type Node = keyof typeof NODES;

interface State {
  frontend_url?: string;
  agent_url?: string;
  processes: { name: string; pid: number }[];
}
interface Slot {
  cache_owner_id: string;
  state: string;
  raw_endpoint?: string;
}

const slotOf = (owner: string) => Number.parseInt(owner.slice(-32), 16);
const nodeOfSlot = (slot: number): Node => (slot < 4 ? "A" : slot < 8 ? "B" : "C");

describe.skipIf(!hasEtcd)("three nodes on one etcd (compiled binary)", () => {
  let bin: string;
  let etcd: EtcdServer;
  let dir: ReturnType<typeof tempDir>;
  const ups: ChildProcess[] = [];
  const states = new Map<Node, State>();

  const common = () => [
    "--discovery-backend", "etcd", "--etcd-endpoints", etcd.endpoint, "--namespace", "multinode",
    "--mocker-processes", "2", "--workers-per-process", "2", "--speedup-ratio", "0",
    "--block-size", "16", "--num-gpu-blocks-override", "64", "--num-host-blocks", "64", "--log-level", "warn",
  ];
  const nodeArgs = (node: Node) => {
    const { host, base } = NODES[node];
    const roles = node === "A" ? ["--roles", "agent,frontend,mockers", "--max-slots", "12", "--http-port", "0", "--agent-port", "0", "--router-mode", "round-robin"] : ["--roles", "mockers"];
    return ["up", ...roles, "--host", host, "--kv-state-agent-raw-host", host, "--cache-slot-base", String(base), "--state-file", join(dir.path, `${node}.json`), ...common()];
  };

  beforeAll(async () => {
    bin = await compiledBinary();
    etcd = await startEtcd();
    dir = tempDir("kvcr-multinode-");
  }, 120_000);
  afterAll(async () => {
    for (const up of ups) await up[Symbol.asyncDispose]();
    // A child whose `up` was SIGKILLed exits through its lifeline; make sure of it.
    for (const s of states.values()) for (const p of s.processes) if (pidAlive(p.pid)) process.kill(p.pid, "SIGKILL");
    await etcd?.[Symbol.asyncDispose]();
    dir?.[Symbol.dispose]();
  });

  async function startNode(node: Node): Promise<ChildProcess> {
    const up = spawnProcess([bin, ...nodeArgs(node)], { cwd: dir.path });
    ups.push(up);
    await up.readLine((l) => l.startsWith("kvcr-mock stack ready"), 60_000);
    states.set(node, JSON.parse(readFileSync(join(dir.path, `${node}.json`), "utf8")) as State);
    return up;
  }

  test("every slot attaches with its node's raw host, routing spans all nodes, overlap refused, node B's death retracts exactly B", async () => {
    const nodeA = await startNode("A");
    await nodeA.readLine((l) => new RegExp(`^ +discovery +etcd ${etcd.endpoint}$`).test(l)); // the summary names etcd, not a dir
    const nodeB = await startNode("B");
    await startNode("C");
    const a = states.get("A")!;
    const slots = async () => (await (await fetch(`${a.agent_url}/v1/slots`)).json()) as Slot[];
    const instances = async () => ((await (await fetch(`${a.frontend_url}/health`)).json()) as { instances: number }).instances;

    await waitFor(async () => (await slots()).filter((s) => s.state === "active").length === 12, { what: "12 active slots on the agent", timeoutMs: 20_000 });
    for (const s of await slots()) {
      const node = nodeOfSlot(slotOf(s.cache_owner_id));
      expect(s.raw_endpoint).toStartWith(`tcp://${NODES[node].host}:`);
    }
    await waitFor(async () => (await instances()) === 12, { what: "the frontend routing over 12 workers", timeoutMs: 20_000 });

    // Round-robin over 12 workers: 12 requests land on every worker, so on every node.
    const served = new Set<string>();
    for (let i = 0; i < 12; i++) {
      const res = await fetch(`${a.frontend_url}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "mock-model", prompt: `hello ${i}`, max_tokens: 2 }) });
      expect(res.status).toBe(200);
      await res.text();
      served.add(res.headers.get("x-kvcr-worker") ?? "");
    }
    const nodesServed = new Set([...served].map((w) => nodeOfSlot(Number(w.replace("kvcr-slot-", "")))));
    expect([...nodesServed].sort()).toEqual(["A", "B", "C"]);
    expect(served.size).toBe(12);

    // A fourth node whose range overlaps B's (6–7) and C's (8–9) is refused, naming both sides.
    const overlap = await runCli(["up", "--roles", "mockers", "--host", "127.0.0.5", "--kv-state-agent-raw-host", "127.0.0.5", "--cache-slot-base", "6", ...common()], { bin, cwd: dir.path, timeoutMs: 60_000 });
    expect(overlap.exitCode).toBe(1);
    // `up` refuses it before starting a mocker (the mocker's own start-up check is the backstop).
    expect(overlap.stderr).toMatch(/CacheOwner ordinals 6–9 of this stack overlap ones already in discovery \(namespace multinode\): ordinal 6 is attached by worker kvcr-slot-6 rank 0 \(pid \d+\) and would be owned by this up's mocker-0/);
    expect(await instances()).toBe(12); // the refused node published nothing

    // etcd restarted under the running stack: no worker leaves routing, no slot detaches, and every
    // role reports the outage and its end on /health.
    const seen: number[] = [];
    let sampling = true;
    // The frontend's worker count, sampled every 50 ms (waitFor's polling) until sampling ends.
    const sampler = waitFor(async () => (seen.push(await instances().catch(() => -1)), !sampling), { intervalMs: 50, timeoutMs: 100_000, what: "the end of the etcd restart" });
    await etcd.kill();
    await waitFor(async () => ((await (await fetch(`${a.frontend_url}/health`)).json()) as { discovery: { connected: boolean } }).discovery.connected === false, { what: "the frontend to see etcd down", timeoutMs: 15_000 });
    await etcd.restart();
    await waitFor(async () => ((await (await fetch(`${a.frontend_url}/health`)).json()) as { discovery: { connected: boolean } }).discovery.connected, { what: "the frontend to see etcd back", timeoutMs: 15_000 });
    await waitFor(async () => ((await (await fetch(`${a.agent_url}/health`)).json()) as { discovery: { connected: boolean } }).discovery.connected, { what: "the agent to see etcd back", timeoutMs: 15_000 });
    sampling = false;
    await sampler;
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.filter((n) => n !== 12)).toEqual([]);
    expect((await slots()).filter((s) => s.state === "active").length).toBe(12);

    // Node B's `up` dies (SIGKILL): its mockers follow through the lifeline and withdraw.
    const bPids = states.get("B")!.processes.map((p) => p.pid);
    nodeB.proc.kill("SIGKILL");
    await waitFor(() => bPids.every((p) => !pidAlive(p)), { what: "node B's mockers to exit", timeoutMs: 15_000 });
    await waitFor(async () => (await instances()) === 8, { what: "the frontend to drop node B's 4 workers", timeoutMs: 15_000 });
    await waitFor(async () => (await slots()).filter((s) => s.state === "active").length === 8, { what: "the agent to detach node B's slots", timeoutMs: 15_000 });
    const after = await slots();
    const active = after.filter((s) => s.state === "active").map((s) => slotOf(s.cache_owner_id)).sort((x, y) => x - y);
    expect(active).toEqual([0, 1, 2, 3, 8, 9, 10, 11]);
    expect(after.filter((s) => s.state !== "active").every((s) => nodeOfSlot(slotOf(s.cache_owner_id)) === "B")).toBe(true);
  }, 120_000);
});
