import { expect, test } from "bun:test";
import { buckets125, HistogramSeries, leText } from "./prometheus-histogram.ts";
import { renderMetrics } from "./prometheus.ts";

test("le bounds are spelled as each exporter prints them", () => {
  expect([0.001, 1, 2.5, 2560].map((b) => leText(b, "python"))).toEqual(["0.001", "1.0", "2.5", "2560.0"]);
  expect([0, 0.0022, 1, 130000].map((b) => leText(b, "rust"))).toEqual(["0", "0.0022", "1", "130000"]);
});

test("build_1_2_5_buckets stops at the last value ≤ max", () => {
  expect(buckets125(100)).toEqual([1, 2, 5, 10, 20, 50, 100]);
  expect(buckets125(4096)).toEqual([1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000]);
});

test("a series is cumulative, ends in +Inf = count, and keeps le last", () => {
  const h = new HistogramSeries([1, 2], "python");
  h.observe(0.5);
  h.observe(2);
  h.observe(9, 2);
  expect(h.samples({ engine: "0" })).toEqual([
    { suffix: "_bucket", labels: { engine: "0", le: "1.0" }, value: 1 },
    { suffix: "_bucket", labels: { engine: "0", le: "2.0" }, value: 2 },
    { suffix: "_bucket", labels: { engine: "0", le: "+Inf" }, value: 4 },
    { suffix: "_sum", labels: { engine: "0" }, value: 20.5 },
    { suffix: "_count", labels: { engine: "0" }, value: 4 },
  ]);
});

test("pre-rendered samples print exactly as the plain ones, label set reused across scrapes", () => {
  const h = new HistogramSeries([0.5, 1], "python");
  h.observe(0.7);
  const labels = { engine: "0", model_name: 'a"b' };
  const plain = renderMetrics([{ name: "x", help: "h", type: "histogram", samples: h.samples(labels) }]);
  expect(renderMetrics([{ name: "x", help: "h", type: "histogram", samples: h.renderedSamples(labels) }])).toBe(plain);
  h.observe(2);
  expect(renderMetrics([{ name: "x", help: "h", type: "histogram", samples: h.renderedSamples(labels) }])).toBe(renderMetrics([{ name: "x", help: "h", type: "histogram", samples: h.samples(labels) }]));
  expect(plain).toContain('x_bucket{engine="0",model_name="a\\"b",le="1.0"} 1\n');
});
