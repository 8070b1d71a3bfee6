// The agent role through start(): a detached slot's retention (from --slot-retention, in seconds)
// and what stopping the role closes: the slots' SUBs, and HTTP connections with a request in flight.
import { afterEach, describe, expect, jest, test } from "bun:test";
import { agentOptions, agentProblems, type AgentConfig } from "../../config/agent.ts";
import { commonOptions } from "../../config/common.ts";
import { loadConfig } from "../../config/load.ts";
import { openFileDiscoveryStore } from "../../discovery/file-store.ts";
import { createLogger } from "../../lib/logger.ts";
import { PubSocket } from "../../transport/zmtp/index.ts";
import { cleanupList, makeTempDir, waitFor, withTimeout } from "../../../test/harness.ts";
import { start, type AgentHandle } from "./start.ts";

const logger = createLogger({ level: "silent" });
const cleanups = cleanupList();
afterEach(() => {
  jest.useRealTimers();
});

const owner = `${"ab".repeat(16)}:${"cd".repeat(16)}/${"0".repeat(16)}/${"0".repeat(31)}1`;

/** The agent role on 127.0.0.1, ports picked, a file discovery store of its own; stopped after the test. */
async function startAgent(flags: string[] = []): Promise<AgentHandle> {
  const tmp = await makeTempDir("kvcr-agent-start-");
  cleanups.push(() => tmp[Symbol.asyncDispose]());
  const store = await openFileDiscoveryStore({ dir: tmp.path, pollIntervalMs: 25, logger });
  cleanups.push(() => store.close());
  const argv = ["--host", "127.0.0.1", "--port", "0", "--namespace", "start-test", "--discovery-dir", tmp.path, ...flags];
  const config = loadConfig({ ...agentOptions, ...commonOptions }, { argv }, (c) => agentProblems(c as AgentConfig)).config as AgentConfig;
  const handle = await start(config, { logger, discovery: store });
  cleanups.push(() => handle.close());
  return handle;
}

/** A raw publisher to attach a slot to (nothing is published: the slot only connects). */
function rawPub(): { pub: PubSocket; endpoint: string } {
  const pub = new PubSocket({ logger });
  cleanups.push(() => pub.close());
  return { pub, endpoint: pub.bind("tcp://127.0.0.1:0") };
}

const addSource = (agent: AgentHandle, endpoint: string) =>
  fetch(`${agent.httpUrl}/v1/sources`, {
    method: "POST",
    body: JSON.stringify({ cache_owner_id: owner, worker_id: "w", dp_rank: 0, block_size: 4, ingress_protocol: "vllm_residency_v1", raw_endpoint: endpoint, raw_topic: "" }),
  });

describe("agent start()", () => {
  test("a detached slot is kept --slot-retention seconds (× 1000 ms), then freed", async () => {
    const agent = await startAgent(["--slot-retention", "1000"]);
    const { endpoint } = rawPub();
    expect((await addSource(agent, endpoint)).status).toBe(201);
    expect(agent.agent.health().slots).toMatchObject({ total: 1, active: 1 });
    // The retention timer starts when the source goes; the clock is driven from here.
    jest.useFakeTimers();
    expect(agent.agent.deleteRuntimeSource(owner).status).toBe(201);
    expect(agent.agent.health().slots).toMatchObject({ total: 1, detached: 1 });
    jest.advanceTimersByTime(999_999);
    expect(agent.agent.health().slots).toMatchObject({ total: 1, detached: 1 });
    jest.advanceTimersByTime(1);
    expect(agent.agent.health().slots.total).toBe(0);
  });

  test("stopping the role closes its slots' SUBs: the raw publisher loses its subscriber", async () => {
    const agent = await startAgent();
    const { pub, endpoint } = rawPub();
    expect((await addSource(agent, endpoint)).status).toBe(201);
    await waitFor(() => pub.peerCount === 1, { what: "the slot's SUB connected to the raw PUB" });
    await withTimeout(agent.close(), 5_000, "the agent role's close");
    await waitFor(() => pub.peerCount === 0, { what: "the slot's SUB gone after the role stopped" });
  });

  test("stopping the role cuts an HTTP connection whose request is still arriving", async () => {
    const agent = await startAgent();
    let closed = false;
    let received = "";
    const socket = await Bun.connect({
      hostname: "127.0.0.1",
      port: agent.ports.http as number,
      socket: {
        data: (_s, chunk) => {
          received += new TextDecoder().decode(chunk);
        },
        close: () => {
          closed = true;
        },
      },
    });
    cleanups.push(() => socket.end());
    // One write: a GET answered at once, then a POST whose 100-byte body never comes. Once the GET's
    // answer is back, the server holds the POST in flight.
    socket.write("GET /live HTTP/1.1\r\nhost: a\r\n\r\nPOST /v1/sources HTTP/1.1\r\nhost: a\r\ncontent-length: 100\r\n\r\n{");
    await waitFor(() => received.includes('{"status":"live"}'), { what: "the GET's answer" });
    await withTimeout(agent.close(), 5_000, "the agent role's close with a request in flight");
    await waitFor(() => closed, { what: "the connection closed by the server" });
  });
});
