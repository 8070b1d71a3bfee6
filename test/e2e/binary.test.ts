// The compiled single binary: argv layout differs from `bun src/cli.ts`, so exercise it for real.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { BUILTIN_TIMING_PROFILES, loadTimingProfile } from "../../src/config/timing-profile.ts";
import { stepTimerOf } from "../../src/core/timing/timing-model.ts";
import { encodeBatch, encodeSeq } from "../../src/protocol/kv-events/index.ts";
import { pack } from "../../src/protocol/msgpack.ts";
import { PubSocket } from "../../src/transport/zmtp/index.ts";
import { startFakeOpenAi } from "../fake-openai-server.ts";
import { runCli, spawnChild, tempDir, waitFor } from "../harness.ts";
import { compiledBinary } from "./compiled.ts";
import { LineQueue } from "../lines.ts";

let dir: ReturnType<typeof tempDir>;
let bin: string;

beforeAll(async () => {
  dir = tempDir("kvcr-bin-cwd-");
  bin = await compiledBinary();
}, 120_000);

afterAll(() => dir?.[Symbol.dispose]());

describe("compiled binary", () => {
  test("--version prints the package version and the build's commit", async () => {
    const r = await runCli(["--version"], { bin, cwd: dir.path });
    expect(r.exitCode).toBe(0);
    expect(r.stdout.trim()).toStartWith(`${pkg.version}+`);
    expect(r.stdout.trim()).not.toBe(`${pkg.version}+source`);
  });

  test("events taps a live stream inside the binary (ZMTP over Bun TCP when compiled)", async () => {
    using pub = new PubSocket();
    const endpoint = pub.bind("tcp://127.0.0.1:0");
    await using child = spawnChild([bin, "events", "--endpoint", endpoint, "--log-level", "silent"], { cwd: dir.path });
    const { proc } = child;
    await waitFor(() => pub.subscriberCount() === 1, { timeoutMs: 10_000, what: "the binary's subscription" });
    pub.send([new Uint8Array(0), encodeSeq(3n), encodeBatch({ ts: 1.5, events: [{ type: "AllBlocksCleared" }], dataParallelRank: 0 })]);
    const lines = new LineQueue(proc.stdout);
    const first = await lines.next(() => true, 10_000, "the binary's first line");
    expect(JSON.parse(first)).toEqual({ seq: 3, topic: "", ts: 1.5, data_parallel_rank: 0, events: [{ type: "AllBlocksCleared" }] });
    // A payload the vLLM decoder refuses is shown through msgpackr, which the binary carries.
    pub.send([new Uint8Array(0), encodeSeq(4n), pack([1.5, [{ type: "BlockEvicted", block_hashes: [2n ** 63n + 1n] }], 0])]);
    const foreign = JSON.parse(await lines.next(() => true, 10_000, "the binary's line for a foreign payload"));
    expect(foreign.payload).toEqual([1.5, [{ type: "BlockEvicted", block_hashes: ["9223372036854775809"] }], 0]);
  });

  test("events exits 0 once its stdout reader goes away (`| head -n 1`)", async () => {
    using pub = new PubSocket();
    const endpoint = pub.bind("tcp://127.0.0.1:0");
    await using child = spawnChild([bin, "events", "--endpoint", endpoint, "--log-level", "silent"], { cwd: dir.path });
    const { proc } = child;
    await waitFor(() => pub.subscriberCount() === 1, { timeoutMs: 10_000, what: "the binary's subscription" });
    let seq = 0n;
    const publish = () => pub.send([new Uint8Array(0), encodeSeq(seq++), encodeBatch({ ts: 1.5, events: [{ type: "AllBlocksCleared" }], dataParallelRank: 0 })]);
    publish();
    const reader = proc.stdout.getReader();
    await reader.read();
    await reader.cancel();
    await waitFor(() => (publish(), proc.exitCode !== null), { timeoutMs: 10_000, what: "the binary to exit after its stdout closed" });
    expect(proc.exitCode).toBe(0);
  });

  test("--help lists the commands", async () => {
    const r = await runCli(["--help"], { bin, cwd: dir.path });
    expect(r.exitCode).toBe(0);
    for (const cmd of ["mocker", "replay", "events", "bench"]) expect(r.stdout).toContain(cmd);
  });

  test.each(["mocker", "replay", "events", "bench"])("%s --help and --version work in the binary", async (cmd) => {
    const help = await runCli([cmd, "--help"], { bin, cwd: dir.path });
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toContain(`kvcr-mock ${cmd}`);
    expect(help.stdout).toContain("--log-level");
    const version = await runCli([cmd, "--version"], { bin, cwd: dir.path });
    expect(version.stdout.trim()).toStartWith(`${pkg.version}+`);
  });

  test("events --help lists its own flags from the binary", async () => {
    const help = await runCli(["events", "--help"], { bin, cwd: dir.path });
    expect(help.exitCode).toBe(0);
    for (const flag of ["--endpoint", "--topic", "--replay", "--from-seq", "--replay-timeout-ms"]) expect(help.stdout).toContain(flag);
  });

  test("a bad flag exits 2 with the problem, from the binary", async () => {
    const r = await runCli(["mocker", "--num-workers", "zero"], { bin, cwd: dir.path });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('--num-workers: got "zero", expected an integer from 1 to 100000');
  });

  test("an unknown command exits 2 naming it", async () => {
    const r = await runCli(["no-such-command"], { bin, cwd: dir.path });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain("no-such-command");
  });

  test("replay runs inside the binary (synthetic workload, JSON report)", async () => {
    const r = await runCli(["replay", "--requests", "20", "--prefix-tokens", "256", "--suffix-tokens", "32", "--output-tokens", "8", "--output-json", "-"], { bin, cwd: dir.path });
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ completed: 20, failed: 0 });
  });

  test("replay prices steps from a built-in timing profile carried in the binary; a wrong name lists them", async () => {
    const name = "builtin:qwen3-32b-h200-vllm0.24-tp2";
    const r = await runCli(["replay", "--requests", "1", "--prefix-tokens", "256", "--suffix-tokens", "32", "--output-tokens", "8", "--timing-profile", name, "--output-json", "-"], { bin, cwd: dir.path });
    expect(r.exitCode).toBe(0);
    const report = JSON.parse(r.stdout) as { completed: number; mean_ttft_ms: number };
    expect(report.completed).toBe(1);
    // One request alone: its TTFT is one prefill pass of its 288 tokens from the profile's table.
    expect(report.mean_ttft_ms).toBeCloseTo(stepTimerOf(loadTimingProfile(name), false).prefillMs(288, 0), 3);
    const bad = await runCli(["replay", "--requests", "1", "--timing-profile", "builtin:qwen3-32b-h200-vllm0.19-tp2"], { bin, cwd: dir.path });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain(`built in: ${BUILTIN_TIMING_PROFILES.join(", ")}`);
  });

  test("bench drives a server and writes its HTML report with uPlot inlined, from the binary", async () => {
    await using server = startFakeOpenAi({ ttftMs: 2, itlMs: 1 });
    const report = join(dir.path, "report.html");
    const r = await runCli(["bench", "--url", server.url, "--requests", "6", "--concurrency", "2", "--prefix-tokens", "16", "--suffix-tokens", "4", "--output-tokens", "3", "--report", report, "--output-json", "-", "--log-level", "warn"], { bin, cwd: dir.path });
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ completed: 6, failed: 0, model_id: "fake-model" });
    const html = await Bun.file(report).text();
    expect(html).toContain("uPlot");
    expect(html).toContain(".u-legend");
  });
});
