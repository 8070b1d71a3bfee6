// `bench --report`: the HTML page opens offline in headless Chromium with no console errors,
// shows one chart per figure, and its screenshot is not blank. Two fake stacks stand in for two
// router modes (--url-per-mode), so the page carries a comparison.
import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CHART_COUNT } from "../../src/roles/bench/html-report.ts";
import { runBench } from "../../src/roles/bench/run-bench.ts";
import { benchDeps, benchOptions } from "../bench-kit.ts";
import { CHROMIUM, decodePng, openPage } from "../chromium.ts";
import { startFakeOpenAi } from "../fake-openai-server.ts";
import { tempDir } from "../harness.ts";

describe("bench HTML report", () => {
  // CI installs chromium (.ci/run): there a missing browser fails the test instead of skipping it.
  test.skipIf(!CHROMIUM && !process.env.CI)("opens in headless Chromium: no console errors, every chart drawn, screenshot not blank", async () => {
    await using kv = startFakeOpenAi({ ttftMs: 8, itlMs: 3, cachedTokens: (p) => p - 8, worker: (n) => `w${n % 2}` });
    await using rr = startFakeOpenAi({ ttftMs: 20, itlMs: 3, cachedTokens: (p, n) => (n % 2 === 0 ? p - 8 : 0), worker: (n) => `w${n % 2}` });
    using dir = tempDir("kvcr-report-");
    const report = join(dir.path, "report.html");
    const out: string[] = [];
    const { results } = await runBench(
      benchOptions(kv.url, {
        targets: [{ label: "kv", url: kv.url }, { label: "round-robin", url: rr.url }],
        workload: { traceBlockSize: 512, skipBadLines: false, synthetic: { numPrefixes: 2, prefixTokens: 32, suffixTokens: 8, outputTokens: 5 }, requests: 24, seed: 3 },
        sweepConcurrency: [2, 6],
        percentiles: [50, 90, 99],
        report,
      }),
      benchDeps({ stdout: { write: (t: string) => out.push(t) } }),
    );
    expect(results.map((r) => r.label)).toEqual(["kv c=2", "kv c=6", "round-robin c=2", "round-robin c=6"]);
    expect(out.join("")).toMatch(/^ +kv c=2 +kv c=6 +round-robin c=2 +round-robin c=6$/m);
    const html = readFileSync(report, "utf8");
    // Offline: nothing is fetched (no external script, stylesheet or image).
    expect(html).not.toMatch(/<(script|link|img)[^>]+(src|href)=/i);
    expect(html).toContain("uPlot");

    await using page = await openPage(`file://${report}`);
    const charts = await page.evaluate<number>("document.querySelectorAll('#charts .uplot').length");
    expect(charts).toBe(CHART_COUNT);
    const drawn = await page.evaluate<number>("[...document.querySelectorAll('#charts .uplot canvas')].filter(c => c.width > 100 && c.height > 100).length");
    expect(drawn).toBe(CHART_COUNT);
    const legend = await page.evaluate<string>("document.querySelector('#chart-ttft .u-legend').textContent");
    expect(legend).toContain("round-robin c=6");
    expect(page.errors).toEqual([]);

    const shot = await page.screenshotPng();
    if (process.env.KVCR_KEEP_SCREENSHOT) writeFileSync(process.env.KVCR_KEEP_SCREENSHOT, shot);
    const png = decodePng(shot);
    expect(png.width).toBeGreaterThan(500);
    // Not blank: a good share of pixels differ from the page background, in many colours.
    let ink = 0;
    const colours = new Set<number>();
    for (let i = 0; i < png.pixels.length; i += png.channels) {
      const [r, g, b] = [png.pixels[i]!, png.pixels[i + 1]!, png.pixels[i + 2]!];
      if (r < 240 || g < 240 || b < 240) ink++;
      colours.add((r << 16) | (g << 8) | b);
    }
    expect(ink / (png.width * png.height)).toBeGreaterThan(0.01);
    expect(colours.size).toBeGreaterThan(20);
  }, 60_000);
});
