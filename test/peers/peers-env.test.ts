// How the peers-environment build reads pip: on pip's own messages (the peers Python's pip), an
// unreachable registry is exit 75, a pin the registry has no wheel for is named, and a GPU build
// in the installed set is refused by name.
import { describe, expect, test } from "bun:test";
import { EX_TEMPFAIL, gpuPackages, pipFailure } from "../../scripts/lib/peers-install.ts";
import { makeTempDir, spawnProcess, withTimeout } from "../harness.ts";
import { PEERS_PYTHON, peersAvailable } from "../peers.ts";

async function pipDownload(args: string[]): Promise<string> {
  await using tmp = await makeTempDir("kvcr-pip-");
  await using pip = spawnProcess([PEERS_PYTHON!, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
    "--retries", "1", "--timeout", "5", "-d", tmp.path, ...args], { env: { PIP_FIND_LINKS: "" } });
  const code = await withTimeout(pip.proc.exited, 60_000, "pip download");
  expect(code).not.toBe(0);
  return pip.stdoutText() + pip.stderrText();
}

describe("peers environment: GPU builds", () => {
  test("a CUDA torch or NVIDIA CUDA library is named; a +cpu wheel and nvidia-ml-py pass", () => {
    const installed = new Map([["torch", "2.9.0"], ["nvidia-cublas-cu12", "12.8.4.1"], ["nvidia-ml-py", "13.615.71"], ["transformers", "5.24.0"]]);
    expect(gpuPackages(installed)).toEqual([["torch", "2.9.0"], ["nvidia-cublas-cu12", "12.8.4.1"]]);
    expect(gpuPackages(new Map([["torch", "2.9.0+cpu"]]))).toEqual([]);
  });
});

describe.if(peersAvailable())("peers environment: pip's failures (peers environment's pip)", () => {
  test("a pin with no wheel on the registry is named with its version (ai-dynamo 1.6.1's own aisimulate pin)", async () => {
    const failure = pipFailure(await pipDownload(["aisimulate==0.13.0"]));
    expect(failure.exitCode).toBe(1);
    expect(failure.message).toContain("aisimulate==0.13.0");
  }, 90_000);

  test("a registry that cannot be reached is exit 75, not a failure of the pins", async () => {
    const failure = pipFailure(await pipDownload(["--index-url", "http://127.0.0.1:9/simple", "aiperf==0.13.0"]));
    expect(failure.exitCode).toBe(EX_TEMPFAIL);
    expect(failure.message).toContain("cannot be reached");
  }, 90_000);
});
