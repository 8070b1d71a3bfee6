// Hung children of a real `up` stack: a SIGSTOPped agent, then a SIGSTOPped mocker process, stops
// answering its liveness probe; up SIGKILLs it (it cannot act on SIGTERM), restarts it through the
// restart policy, counts it in the state file, and the frontend's index comes back to the mockers'
// truth. With the mocker stopped, requests that stall on it probe its /health, which does not
// answer: it leaves routing at once (before up's kill) and they migrate. How soon up kills is bounded
// in its probe rounds (counted on the frontend's /live), not in seconds; detection and recovery times
// are printed (figures, not assertions). Every stopped process is killed in `finally`.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { auditPoint, type AuditPoint } from "../../src/core/audit/index-audit.ts";
import { readResidency, readTruths } from "../../src/roles/shared/stack/stack-truth.ts";
import { CLI_ENTRY, cleanupList, pidAlive, spawnProcess, tempDir, waitFor, type ChildProcess } from "../harness.ts";

const cleanups = cleanupList();

interface State {
  frontend_url: string;
  processes: { name: string; role: string; pid: number; url: string; restarts: number; liveness_restarts: number }[];
}

async function up(args: string[]): Promise<{ child: ChildProcess; stateFile: string; state: () => State }> {
  const dir = tempDir("kvcr-up-liveness-");
  cleanups.push(() => dir[Symbol.dispose]());
  const stateFile = join(dir.path, "state.json");
  const child = spawnProcess([
    process.execPath, CLI_ENTRY, "up", "--discovery-dir", join(dir.path, "discovery"), "--agent-port", "0", "--http-port", "0",
    "--num-gpu-blocks-override", "256", "--block-size", "4", "--state-file", stateFile, "--grace-period", "2", "--restart-backoff", "0.1", ...args,
  ]);
  cleanups.push(() => child[Symbol.asyncDispose]());
  await child.readLine((l) => l.startsWith("kvcr-mock stack ready"), 60_000);
  const state = () => JSON.parse(readFileSync(stateFile, "utf8")) as State;
  const pids = state().processes.map((p) => p.pid);
  // up is SIGKILLed by the cleanup above, which its children survive only until their lifeline read; belt and braces.
  cleanups.push(() => {
    for (const pid of pids) if (pidAlive(pid)) process.kill(pid, "SIGKILL");
  });
  return { child, stateFile, state };
}

let promptSeq = 0;
/** A request with a prompt of its own (so each stores new blocks). */
async function complete(frontendUrl: string): Promise<number> {
  const n = promptSeq++;
  const prompt = Array.from({ length: 24 }, (_, i) => 1 + ((n * 97 + i * 13) % 5000));
  const res = await fetch(`${frontendUrl}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "mock-model", prompt, max_tokens: 2 }) });
  await res.arrayBuffer();
  return res.status;
}

/** The frontend's index against every mocker's truth (device tier); undefined while a mocker does not answer. */
async function audit(state: State): Promise<(AuditPoint & { truthBlocks: number }) | undefined> {
  const indexUrl = `${state.frontend_url}/v1/index`;
  const indexBefore = await readResidency(indexUrl);
  const docs = await readTruths(state.processes.filter((p) => p.role === "mocker").map((p) => p.url));
  if (docs.some((d) => d === undefined)) return undefined;
  const truth = { sources: docs.flatMap((d) => d!.sources) };
  const point = auditPoint({ t_s: 0, truth, indexBefore, indexAfter: await readResidency(indexUrl) });
  return { ...point, truthBlocks: truth.sources.reduce((n, s) => n + s.tiers.device.length, 0) };
}

const exact = (p: AuditPoint | undefined) => p !== undefined && p.precision >= 0.99 && p.recall >= 0.99;

function metric(text: string, name: string): number {
  const escaped = name.replace(/[{}"]/g, (c) => `\\${c}`);
  return Number(new RegExp(`^${escaped} (\\d+)`, "m").exec(text)?.[1] ?? NaN);
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

/**
 * up's liveness probe rounds so far, counted where they land on the frontend: each round GETs every
 * child's liveness URL once (the frontend's /live, which nothing else here asks), once a second or
 * twice per timeout when that is shorter.
 */
async function probeRounds(frontendUrl: string): Promise<number> {
  const n = metric(await (await fetch(`${frontendUrl}/metrics`)).text(), 'kvcr_frontend_requests_total{route="/live",status="200"}');
  return Number.isNaN(n) ? 0 : n;
}

describe("up --liveness-timeout", () => {
  test("a SIGSTOPped agent is SIGKILLed by the probe rounds that find it silent for the timeout (at most timeout / interval + 2 after the stop), restarted once, counted in the state file, and the index comes back", async () => {
    const { child, state } = await up(["--liveness-timeout", "2"]);
    const s = state();
    for (let i = 0; i < 6; i++) expect(await complete(s.frontend_url)).toBe(200);
    await waitFor(async () => exact(await audit(s)), { what: "the index to match the truth before the fault", timeoutMs: 10_000 });
    const agent = s.processes.find((p) => p.role === "agent")!;
    let stopped: number | undefined;
    try {
      process.kill(agent.pid, "SIGSTOP");
      stopped = agent.pid;
      const t0 = performance.now();
      const roundsAtStop = await probeRounds(s.frontend_url);
      // Published while no agent listens: only the restarted agent's state dumps bring these back.
      for (let i = 0; i < 4; i++) expect(await complete(s.frontend_url)).toBe(200);
      const hung = await child.readErrLine((l) => l.includes(`agent (pid ${agent.pid}) has not answered ${agent.url}/live for`), 15_000);
      const detectedMs = performance.now() - t0;
      expect(hung).toContain("(--liveness-timeout 2): SIGKILL");
      // The bound in probe rounds, not seconds: the timeout is 2 rounds (2 s, probed each second). Its
      // last answer was to the round of the stop or the one before; the round that first finds 2 s of
      // silence kills it, the third after that answer at the latest; and one more may land before this read.
      const roundsToKill = (await probeRounds(s.frontend_url)) - roundsAtStop;
      expect(roundsToKill).toBeLessThanOrEqual(2 + 2);
      await child.readErrLine((l) => l.includes(`agent (pid ${agent.pid}) was killed by SIGKILL (hung: no answer to its liveness probe for`) && l.includes("restarting it in 0.1 s (attempt 1 of 5"), 5_000);
      await child.readErrLine((l) => /agent restarted \(pid \d+\) and ready again/.test(l), 30_000);
      const restartedMs = performance.now() - t0;
      expect(pidAlive(agent.pid)).toBe(false);
      await waitFor(() => state().processes.find((p) => p.role === "agent")!.liveness_restarts === 1, { what: "the state file to count the liveness restart" });
      expect(state().processes.find((p) => p.role === "agent")).toMatchObject({ restarts: 1, liveness_restarts: 1 });
      expect(state().processes.filter((p) => p.role !== "agent").map((p) => p.restarts)).toEqual([0, 0]);
      const point = await waitFor(async () => {
        const p = await audit(s);
        return exact(p) ? p : undefined;
      }, { what: "the frontend's index to match the mockers' truth again", timeoutMs: 20_000 });
      expect(point.truthBlocks).toBeGreaterThan(0);
      // Restarted once only: the new agent, probed since, was never blamed for the old one's silence.
      expect(state().processes.find((p) => p.role === "agent")).toMatchObject({ restarts: 1, liveness_restarts: 1 });
      console.log(`liveness, SIGSTOPped agent: SIGKILL after ${seconds(detectedMs)} (${roundsToKill} probe rounds), ready again after ${seconds(restartedMs)}, index exact after ${seconds(performance.now() - t0)}`);
    } finally {
      if (stopped !== undefined && pidAlive(stopped)) process.kill(stopped, "SIGKILL");
    }
  }, 90_000);

  test("a SIGSTOPped mocker: its stalled requests eject it at once and migrate; up SIGKILLs and restarts it; the index comes back", async () => {
    const { child, state } = await up([
      // A liveness timeout well past the stall (1 s) plus its probe's deadline (1 s): the ejection comes first by seconds.
      "--liveness-timeout", "6", "--mocker-processes", "2", "--workers-per-process", "1", "--router-mode", "round-robin", "--migration-limit", "1", "--worker-stall-timeout", "1",
    ]);
    const s = state();
    for (let i = 0; i < 6; i++) expect(await complete(s.frontend_url)).toBe(200);
    await waitFor(async () => exact(await audit(s)), { what: "the index to match the truth before the fault", timeoutMs: 10_000 });
    const mocker = s.processes.find((p) => p.name === "mocker-0")!;
    const metrics = async () => (await fetch(`${s.frontend_url}/metrics`)).text();
    let stopped: number | undefined;
    try {
      process.kill(mocker.pid, "SIGSTOP");
      stopped = mocker.pid;
      const t0 = performance.now();
      // Round-robin: half of these start on the stopped mocker, stall, and migrate to the other.
      const statuses = await Promise.all(Array.from({ length: 6 }, () => complete(s.frontend_url)));
      expect(statuses).toEqual([200, 200, 200, 200, 200, 200]);
      await waitFor(async () => metric(await metrics(), 'kvcr_frontend_worker_ejections_total{reason="stalled"}') === 1, { what: "the stalled mocker's worker to leave routing on its failed probe", timeoutMs: 5_000 });
      const ejectedMs = performance.now() - t0;
      // "At once": on the stall probe, before up's liveness watch found it silent for its timeout and
      // killed it (no such kill logged yet, the state file counts no restart, the stopped pid is still there).
      expect(child.stderrText()).not.toContain(`mocker-0 (pid ${mocker.pid}) has not answered`);
      expect(state().processes.find((p) => p.name === "mocker-0")).toMatchObject({ pid: mocker.pid, restarts: 0, liveness_restarts: 0 });
      expect(pidAlive(mocker.pid)).toBe(true);
      const text = await metrics();
      // The stalled requests shared one probe of its /health, and its failure alone ejected the worker.
      expect(metric(text, 'kvcr_frontend_stall_probes_total{outcome="failed"}')).toBe(1);
      expect(metric(text, 'kvcr_frontend_worker_ejections_total{reason="failures"}')).toBe(0);

      await child.readErrLine((l) => l.includes(`mocker-0 (pid ${mocker.pid}) has not answered ${mocker.url}/live for`), 15_000);
      const detectedMs = performance.now() - t0;
      await child.readErrLine((l) => /mocker-0 restarted \(pid \d+\) and ready again/.test(l), 30_000);
      const restartedMs = performance.now() - t0;
      await waitFor(() => state().processes.find((p) => p.name === "mocker-0")!.liveness_restarts === 1, { what: "the state file to count the liveness restart" });
      expect(state().processes.find((p) => p.name === "mocker-0")).toMatchObject({ restarts: 1, liveness_restarts: 1 });
      // The restarted mocker's workers serve again and the index follows its fresh cache.
      await waitFor(async () => metric(await metrics(), "kvcr_frontend_ejected_workers") === 0, { what: "the restarted worker back in routing", timeoutMs: 15_000 });
      for (let i = 0; i < 4; i++) expect(await complete(s.frontend_url)).toBe(200);
      await waitFor(async () => exact(await audit(state())), { what: "the frontend's index to match the mockers' truth again", timeoutMs: 20_000 });
      console.log(
        `liveness, SIGSTOPped mocker: its worker ejected on a failed stall probe after ${seconds(ejectedMs)}, SIGKILL after ${seconds(detectedMs)}, ready again after ${seconds(restartedMs)}, index exact after ${seconds(performance.now() - t0)}`,
      );
    } finally {
      if (stopped !== undefined && pidAlive(stopped)) process.kill(stopped, "SIGKILL");
    }
  }, 90_000);
});
