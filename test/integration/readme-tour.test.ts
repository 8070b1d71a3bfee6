// The README's tour, run as a new user types it: every command of its two shell blocks (not the
// install and test pair above them), in order, through `sh`. Only what a test needs is changed:
// `npm start --` is what it execs (`bun src/cli.ts`), each port the tour names is a free one, an
// `up` line gets those ports as flags, and discovery goes to a temp dir (KVCR_DISCOVERY_DIR). The
// commands run in a scratch directory where `examples/` is the repository's, so the reports they
// write land there. The first `up` is stopped with SIGINT (Ctrl-C) before the last line, as the
// tour says.
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { CLI_ENTRY, cleanupList, heldPort, REPO_ROOT, spawnProcess, tempDir, waitFor, runCli, type ChildProcess } from "../harness.ts";

const cleanups = cleanupList();

/** The shell blocks of the README's tour section: each command with its continuation lines joined. */
function tourBlocks(): string[][] {
  const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## A five-minute tour"), readme.indexOf("\n## ", readme.indexOf("## A five-minute tour") + 1));
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!.replace(/\\\n\s*/g, "").split("\n").filter((l) => l.trim() !== ""));
}

interface TourLine {
  /** The command as a test runs it. */
  sh: string;
  /** Written with a trailing `&`. */
  background: boolean;
}

/** A tour line as the test runs it: the ports swapped, `npm start --` as what it execs, `up` on the free ports. */
function rewrite(line: string, ports: ReadonlyMap<string, number>): TourLine {
  const background = /\s&\s*(#.*)?$/.test(line);
  let sh = background ? line.replace(/\s&(\s*(#.*)?)$/, "$1") : line;
  for (const [from, to] of ports) sh = sh.replace(new RegExp(`\\b${from}\\b`, "g"), String(to));
  sh = sh.replace(/^npm start -- /, `"${process.execPath}" "${CLI_ENTRY}" `);
  sh = sh.replace(/(cli\.ts" up)\b/, `$1 --http-port ${ports.get("8000")} --agent-port ${ports.get("9091")}`);
  return { sh: `exec ${sh}`, background };
}

function tourPorts(): { ports: Map<string, number>; release(): void } {
  const held = ["8000", "9091", "5557", "5558", "8100"].map((p) => [p, heldPort()] as const);
  return { ports: new Map(held.map(([p, h]) => [p, h.port])), release: () => held.forEach(([, h]) => h.close()) };
}

describe("the README's tour, as written", () => {
  const [tour, onePiece] = tourBlocks();

  test("has the commands this test follows", () => {
    const head = (l: string) => l.split(/\s+/).slice(0, 5).join(" ");
    expect(tour!.map(head)).toEqual([
      "npm start -- up #",
      "curl -s localhost:8000/v1/chat/completions -H 'Content-Type:",
      "npm start -- bench --url",
      "npm start -- bench --url",
      "npm start -- replay --trace",
      "npm start -- bench --compare-router-modes",
      "npm start -- up --num-workers",
    ]);
    expect(onePiece!.map(head)).toEqual(["npm start -- mocker --num-workers", "npm start -- events --endpoint", `curl -N localhost:8100/v1/generate -d '{"worker":0,"token_ids":[1,2,3,4,5,6,7,8],"max_tokens":4}'`]);
  });

  test("the stack, a request, bench, faults with the audit, replay, the router comparison, a command against a stack", async () => {
    using dir = tempDir("kvcr-tour-");
    symlinkSync(join(REPO_ROOT, "examples"), join(dir.path, "examples"));
    const env = { KVCR_DISCOVERY_DIR: join(dir.path, "discovery") };
    const { ports, release } = tourPorts();
    const lines = tour!.map((l) => rewrite(l, ports));
    const start = (line: TourLine): ChildProcess => {
      const child = spawnProcess(["sh", "-c", line.sh], { cwd: dir.path, env });
      cleanups.push(() => child[Symbol.asyncDispose]());
      return child;
    };
    /** Runs a foreground line to its end: its output and exit code. */
    const run = async (line: TourLine, timeoutMs: number) => {
      const r = await runCli(["-c", line.sh], { bin: "sh", cwd: dir.path, env, timeoutMs });
      expect({ line: line.sh, code: r.exitCode, stderr: r.exitCode === 0 ? "" : r.stderr }).toEqual({ line: line.sh, code: 0, stderr: "" });
      return r.stdout;
    };

    release();
    const up = start(lines[0]!);
    await up.readLine((l) => l.startsWith("kvcr-mock stack ready"), 60_000);

    const chat = JSON.parse(await run(lines[1]!, 15_000));
    expect(chat.choices[0].message.content.length).toBeGreaterThan(0);

    expect(await run(lines[2]!, 120_000)).toMatch(/Successful requests:\s+200\n/);

    // The faults run: the batches worker 0 loses silently show in the audit as recall below 1.
    const faults = await run(lines[3]!, 120_000);
    expect(faults).toContain("Faults:");
    const worst = /^kvcr-slot-0\s+(\S+)\s+(\S+)$/m.exec(faults.slice(faults.indexOf("Index accuracy")));
    expect(Number(worst?.[2])).toBeLessThan(1);
    expect(existsSync(join(dir.path, "r.html"))).toBe(true);

    expect(await run(lines[4]!, 60_000)).toMatch(/Successful requests:\s+\d+/);

    // The router comparison: kv reuses more of the cache than round-robin where routing matters.
    const comparison = await run(lines[5]!, 180_000);
    const reuse = /^prefix cache reuse ratio\s+(\S+)\s+(\S+)$/m.exec(comparison);
    expect(reuse, comparison).not.toBeNull();
    expect(Number(reuse![1])).toBeGreaterThan(Number(reuse![2]) + 0.1);
    expect(existsSync(join(dir.path, "report.html"))).toBe(true);

    // Ctrl-C on the first up, then the last line starts a stack of its own on the same ports.
    process.kill(-up.proc.pid, "SIGINT");
    expect(await up.proc.exited).toBe(0);
    expect(JSON.parse(await run(lines[6]!, 90_000)).data[0].id).toBe("mock-model");
  }, 600_000);

  test("one piece at a time: a mocker, the events tap on its stream, a generate request", async () => {
    using dir = tempDir("kvcr-tour-piece-");
    const env = { KVCR_DISCOVERY_DIR: join(dir.path, "discovery") };
    const { ports, release } = tourPorts();
    const [mocker, events, curl] = onePiece!.map((l) => rewrite(l, ports));
    expect([mocker!.background, events!.background, curl!.background]).toEqual([true, true, false]);
    const start = (line: TourLine): ChildProcess => {
      const child = spawnProcess(["sh", "-c", line.sh], { cwd: dir.path, env });
      cleanups.push(() => child[Symbol.asyncDispose]());
      return child;
    };
    release();
    start(mocker!);
    const health = `http://127.0.0.1:${ports.get("8100")}/health`;
    await waitFor(async () => (await fetch(health)).ok, { timeoutMs: 30_000, what: `${health} to answer 200` });
    const tap = start(events!);
    await tap.readErrLine((l) => l.includes("events: subscribed to"), 15_000);

    const generate = await runCli(["-c", curl!.sh], { bin: "sh", cwd: dir.path, env, timeoutMs: 15_000 });
    expect(generate.exitCode).toBe(0);
    const tokens = generate.stdout.trim().split("\n").map((l) => JSON.parse(l));
    expect(tokens.length).toBeGreaterThan(0);
    // The two 4-token blocks of the prompt, stored and published, come out of the tap.
    const batch = JSON.parse(await tap.readLine((l) => l.includes("BlockStored"), 15_000));
    expect(batch.events[0]).toMatchObject({ type: "BlockStored", block_size: 4, token_ids: [1, 2, 3, 4, 5, 6, 7, 8] });
  }, 120_000);
});
