// `bench --report` against a server streaming at a steady token rate, opened in headless Chromium:
// the header says what was run (command, URL, model, workload, seed, date, version), every chart
// fills the page width and follows the window, the throughput chart's pixels are drawn, and its
// series is flat (tokens counted when they arrived), where binning by request end is a sawtooth.
import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runBench } from "../../src/roles/bench/run-bench.ts";
import { VERSION } from "../../src/lib/version.ts";
import { CHROMIUM, decodePng, openPage } from "../chromium.ts";
import { benchDeps, benchOptions } from "../bench-kit.ts";
import { startFakeOpenAi } from "../fake-openai-server.ts";
import { tempDir } from "../harness.ts";

const TOKENS = 30;
const ITL_MS = 10;

describe("bench HTML report: header, width, throughput from token arrivals", () => {
  test.skipIf(!CHROMIUM && !process.env.CI)("steady streams → a flat throughput curve, drawn full width under a header naming the run", async () => {
    // 4 streams in a closed loop, each request streaming TOKENS tokens one per ITL_MS: ~400 tokens/s throughout.
    await using server = startFakeOpenAi({ ttftMs: 2, itlMs: ITL_MS, models: ["steady-model"] });
    using dir = tempDir("kvcr-report-page-");
    const report = join(dir.path, "report.html");
    const { results } = await runBench(
      benchOptions(server.url, {
        workload: { traceBlockSize: 512, skipBadLines: false, synthetic: { numPrefixes: 2, prefixTokens: 16, suffixTokens: 4, outputTokens: TOKENS }, requests: 24, seed: 11 },
        concurrency: 4,
        report,
      }),
      benchDeps(),
    );
    expect(results[0]!.completed).toBe(24);
    const html = readFileSync(report, "utf8");

    // The series as the page draws it (the payload is inlined as `var R = {...};`).
    const payload = JSON.parse(/var R = (\{.*\});\n/.exec(html)![1]!) as { charts: { id: string; data: (number | null)[][] }[] };
    const chart = payload.charts.find((c) => c.id === "throughput")!;
    const values = chart.data[1]!.filter((v): v is number => v !== null);
    expect(values.length).toBeGreaterThan(10);
    // Flat: between the first and the last bin (ramp-up and tail), nine bins in ten within ±40% of
    // the median and little spread overall (a loaded machine's timers move a token or two across a
    // bin edge, a stall now and then more); the same requests binned by when they ended leave most
    // bins empty.
    const inner = values.slice(1, -1);
    const median = [...inner].sort((a, b) => a - b)[Math.floor(inner.length / 2)]!;
    expect(median).toBeGreaterThan(150);
    expect(inner.filter((v) => Math.abs(v - median) / median < 0.4).length / inner.length).toBeGreaterThanOrEqual(0.9);
    const mean = inner.reduce((a, v) => a + v, 0) / inner.length;
    expect(Math.sqrt(inner.reduce((a, v) => a + (v - mean) ** 2, 0) / inner.length) / mean).toBeLessThan(0.25);
    const binS = chart.data[0]![1]! - chart.data[0]![0]!;
    const ends = server.timings.map((t) => t.doneMs!);
    const t0 = Math.min(...server.timings.map((t) => t.receivedMs));
    const byEnd = new Array<number>(values.length).fill(0);
    for (const e of ends) byEnd[Math.min(values.length - 1, Math.floor((e - t0) / 1000 / binS))]! += TOKENS;
    expect(byEnd.filter((x) => x === 0).length).toBeGreaterThan(values.length / 3);

    await using page = await openPage(`file://${report}`, { width: 1200, height: 2400 });
    expect(page.errors).toEqual([]);
    // The header: what was run.
    const header = await page.evaluate<string>("document.getElementById('run-header').textContent + ' ' + document.getElementById('run-targets').textContent");
    for (const part of ["Command", "kvcr-mock", VERSION, server.url + "/v1/completions", "steady-model", "shared-prefix synthetic", "num-prefixes 2", "output-tokens 30", "24 requests", "Seed11", "closed loop, concurrency 4", results[0]!.date]) {
      expect(header).toContain(part);
    }
    // Charts as wide as the page, and again after the page narrows.
    const widths = () => page.evaluate<{ page: number; charts: number[] }>("({ page: document.getElementById('charts').clientWidth, charts: [...document.querySelectorAll('#charts .uplot')].map(e => e.getBoundingClientRect().width) })");
    const wide = await widths();
    expect(wide.page).toBeGreaterThan(1000);
    for (const w of wide.charts) expect(Math.abs(w - wide.page)).toBeLessThanOrEqual(2);
    await page.evaluate<void>("document.body.style.width = '600px'; window.dispatchEvent(new Event('resize')); new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r())))");
    const narrow = await widths();
    expect(narrow.page).toBe(600);
    for (const w of narrow.charts) expect(Math.abs(w - 600)).toBeLessThanOrEqual(2);
    await page.evaluate<void>("document.body.style.width = ''; window.dispatchEvent(new Event('resize')); new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r())))");

    // Pixels: inside the throughput chart's plot area, the run's line colour (#1f77b4) is drawn across the width.
    const box = await page.evaluate<{ x: number; y: number; w: number; h: number; dpr: number }>(
      "(() => { const r = document.querySelector('#chart-throughput .u-over').getBoundingClientRect(); return { x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height, dpr: devicePixelRatio }; })()",
    );
    expect(box.w).toBeGreaterThan(800);
    const shot = await page.screenshotPng();
    if (process.env.KVCR_KEEP_SCREENSHOT) writeFileSync(process.env.KVCR_KEEP_SCREENSHOT, shot);
    const png = decodePng(shot);
    const columns = new Set<number>();
    for (let y = Math.floor(box.y * box.dpr); y < (box.y + box.h) * box.dpr && y < png.height; y++) {
      for (let x = Math.floor(box.x * box.dpr); x < (box.x + box.w) * box.dpr && x < png.width; x++) {
        const i = (y * png.width + x) * png.channels;
        const [r, g, b] = [png.pixels[i]!, png.pixels[i + 1]!, png.pixels[i + 2]!];
        if (Math.abs(r - 0x1f) < 40 && Math.abs(g - 0x77) < 40 && Math.abs(b - 0xb4) < 40) columns.add(Math.floor(x / box.dpr));
      }
    }
    // The curve spans most of the plot's width (not a blank area, not a few spikes).
    expect(columns.size / box.w).toBeGreaterThan(0.6);
  }, 60_000);
});
