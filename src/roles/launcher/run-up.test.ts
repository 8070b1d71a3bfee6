import { expect, test } from "bun:test";
import { workerApiText } from "./run-up.ts";

test("the ready summary lists every worker's API URL: each while few or scattered, one range when the ports run on", () => {
  const run = Array.from({ length: 6 }, (_, i) => `http://127.0.0.1:${30000 + i}`);
  expect(workerApiText(run)).toBe("http://127.0.0.1:{30000–30005} (6 workers: worker i on 30000 + i)");
  expect(workerApiText(run.slice(0, 2))).toBe("http://127.0.0.1:30000 http://127.0.0.1:30001");
  const scattered = [...run.slice(0, 4), "http://127.0.0.1:40000"];
  expect(workerApiText(scattered)).toBe(scattered.join(" "));
});
