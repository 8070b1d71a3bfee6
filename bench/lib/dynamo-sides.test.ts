import { describe, expect, test } from "bun:test";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { upConfigFrom } from "../../src/config/up.ts";
import { tempDir } from "../../test/harness.ts";
import { pinnedPeersPython, runBench, writeStackFile } from "./dynamo-sides.ts";

describe("the sides of a comparison with Dynamo", () => {
  test("each side's stack file runs the same engine settings and router mode; only Dynamo's mocker side names a mocker command", () => {
    using dir = tempDir("kvcr-sides-");
    const s = { workers: 2, routerMode: "round-robin" as const, engine: { block_size: 64, num_gpu_blocks_override: 160, num_host_blocks: 0, speedup_ratio: 10 } };
    const read = (side: Parameters<typeof writeStackFile>[2]) => upConfigFrom(["--config", writeStackFile(dir.path, side.replaceAll("/", "-"), side, s)]);
    const [theirs, ours, native] = [read("dynamo-frontend/dynamo-mocker"), read("dynamo-frontend/kvcr-mock-mocker"), read("kvcr-mock-frontend/kvcr-mock-mocker")];
    for (const c of [theirs, ours, native]) expect(c).toMatchObject({ blockSize: 64, numGpuBlocksOverride: 160, numHostBlocks: 0, speedupRatio: 10, routerMode: "round-robin", workersPerProcess: 2, kvStateAgent: false });
    expect([theirs.runtime, ours.runtime, native.runtime]).toEqual(["dynamo", "dynamo", "kvcr"]);
    expect(theirs.mockerCmd).toContain("-m dynamo.mocker");
    expect(theirs.mockerCmd).toContain("{engine_args}");
    expect([ours.mockerCmd, native.mockerCmd]).toEqual([undefined, undefined]);
  });

  test("a peers Python with another Dynamo is named, not measured", () => {
    using dir = tempDir("kvcr-sides-");
    const fake = join(dir.path, "python");
    writeFileSync(fake, "#!/bin/sh\necho 1.5.0 1.5.0\n");
    chmodSync(fake, 0o755);
    expect(() => pinnedPeersPython({ KVCR_PEERS_PYTHON: fake })).toThrow(`${fake} has ai-dynamo 1.5.0 / ai-dynamo-runtime 1.5.0, not the pinned 1.6.1`);
    writeFileSync(fake, "#!/bin/sh\necho no module >&2\nexit 1\n");
    expect(() => pinnedPeersPython({ KVCR_PEERS_PYTHON: fake })).toThrow(`${fake}: cannot read Dynamo's version:\nno module`);
  });

  test("a side whose stack fails to start ends the comparison with the command and the dead role's last output", async () => {
    using dir = tempDir("kvcr-sides-");
    const file = join(dir.path, "broken.yaml");
    writeFileSync(file, "stack:\n  kv_state_agent: false\n  mocker_cmd: sh -c 'echo no engine here >&2; exit 3'\n");
    const log = console.log;
    console.log = () => {};
    try {
      const err = await runBench(["--compare-stacks", `a=${file},b=${file}`, "--requests", "4"], join(dir.path, "out.json"), process.env, []).then(() => undefined, (e: Error) => e);
      expect(err?.message).toContain("bench exited 1");
      expect(err?.message).toContain(`--compare-stacks a=${file},b=${file}`);
      expect(err?.message).toContain("no engine here");
    } finally {
      console.log = log;
    }
  }, 30_000);
});
