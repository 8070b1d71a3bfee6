// A live mocker timed by a parametric profile (what calibrate writes): a request waits its
// per-request cost before it is scheduled, on the live clock as in replay; the engine-side TTFT
// that vLLM's metrics report includes it.
import { afterEach, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { startMocker } from "../../src/roles/mocker/index.ts";
import { makeTempDir, withTimeout } from "../harness.ts";
import { sampleParametric } from "../timing-profile-kit.ts";
import { logger, mockerConfig } from "./mocker-kit.ts";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("a live mocker on a parametric profile", () => {
  test("the per-request cost delays the first token, and TTFT counts it", async () => {
    await using dir = await makeTempDir("kvcr-parametric-");
    const profile = join(dir.path, "fitted.json");
    // 400 ms before scheduling; the steps themselves cost a few ms.
    writeFileSync(profile, JSON.stringify(sampleParametric(400)));
    // (The command line implies --timing-model profile; the kit reads flags without that overlay.)
    const m = await startMocker(mockerConfig(["--timing-model", "profile", "--timing-profile", profile, "--discovery-dir", dir.path]), { logger, env: {} });
    cleanups.push(() => m.close());
    await withTimeout(m.ready, 10_000, "registration");
    const sent = performance.now();
    const res = await fetch(`${m.httpUrl}/v1/generate`, { method: "POST", body: JSON.stringify({ worker: 0, token_ids: [1, 2, 3, 4], max_tokens: 2 }) });
    const reader = res.body!.getReader();
    const first = await reader.read();
    const firstMs = performance.now() - sent;
    expect(new TextDecoder().decode(first.value)).toStartWith('{"token_id":');
    expect(firstMs).toBeGreaterThanOrEqual(400);
    while (!(await reader.read()).done);
    const metrics = await (await fetch(`${m.httpUrl}/metrics`)).text();
    const ttftSum = Number(/^vllm:time_to_first_token_seconds_sum\{[^}]*\} (\S+)$/m.exec(metrics)?.[1]);
    expect(ttftSum).toBeGreaterThanOrEqual(0.4);
  }, 30_000);
});
