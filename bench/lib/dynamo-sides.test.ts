import { describe, expect, test } from "bun:test";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { upConfigFrom } from "../../src/config/up.ts";
import { tempDir } from "../../test/harness.ts";
import { pinnedPeersPython, writeStackFile } from "./dynamo-sides.ts";

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
});
