import { expect, test } from "bun:test";
import { parse } from "yaml";
import { prometheusScrapeConfig } from "./prometheus-config.ts";

test("one job per role, one labelled target group per process, hosts from the URLs", () => {
  const text = prometheusScrapeConfig([
    { name: "agent", role: "agent", url: "http://127.0.0.1:9091" },
    { name: "mocker-0", role: "mocker", url: "http://127.0.0.1:40001" },
    { name: "mocker-1", role: "mocker", url: "http://127.0.0.1:40002" },
    { name: "frontend", role: "frontend", url: "http://127.0.0.1:8000" },
  ]);
  expect(parse(text)).toEqual({
    global: { scrape_interval: "5s" },
    scrape_configs: [
      { job_name: "kvcr-agent", metrics_path: "/metrics", static_configs: [{ targets: ["127.0.0.1:9091"], labels: { process: "agent" } }] },
      {
        job_name: "kvcr-mocker",
        metrics_path: "/metrics",
        static_configs: [
          { targets: ["127.0.0.1:40001"], labels: { process: "mocker-0" } },
          { targets: ["127.0.0.1:40002"], labels: { process: "mocker-1" } },
        ],
      },
      { job_name: "kvcr-frontend", metrics_path: "/metrics", static_configs: [{ targets: ["127.0.0.1:8000"], labels: { process: "frontend" } }] },
    ],
  });
});
