import { expect, test } from "bun:test";
import { renderMetrics } from "./prometheus.ts";

test("renders families with escaped labels", () => {
  const text = renderMetrics([
    { name: "kvcr_requests_total", help: "Requests served", type: "counter", samples: [{ labels: { worker: 0, dp_rank: 1 }, value: 3 }] },
    { name: "kvcr_g1_usage", help: "G1 usage", type: "gauge", samples: [{ labels: { model: 'a"b' }, value: 0.5 }, { value: NaN }] },
  ]);
  expect(text).toBe(
    [
      "# HELP kvcr_requests_total Requests served",
      "# TYPE kvcr_requests_total counter",
      'kvcr_requests_total{worker="0",dp_rank="1"} 3',
      "# HELP kvcr_g1_usage G1 usage",
      "# TYPE kvcr_g1_usage gauge",
      'kvcr_g1_usage{model="a\\"b"} 0.5',
      "kvcr_g1_usage NaN",
      "",
    ].join("\n"),
  );
});

test("families with one name are merged into one block", () => {
  const text = renderMetrics([
    { name: "m", help: "h", type: "counter", samples: [{ labels: { worker: 0 }, value: 1 }] },
    { name: "m", help: "h", type: "counter", samples: [{ labels: { worker: 1 }, value: 2 }] },
  ]);
  expect(text).toBe('# HELP m h\n# TYPE m counter\nm{worker="0"} 1\nm{worker="1"} 2\n');
});
