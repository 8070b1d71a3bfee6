// up's JSON lines: a child's JSON line keeps its fields and gains the child's name as `role`; any
// other line is wrapped as an info line; the ready summary is one object of role "up".
import { expect, test } from "bun:test";
import { childJsonLine, readyJsonLine } from "./json-lines.ts";

const at = new Date("2026-01-02T03:04:05.000Z");

test("a child's JSON line keeps its fields; role becomes its name", () => {
  const line = JSON.stringify({ ts: "t", level: "warn", role: "mocker", tag: "mocker", msg: "m", args: [1] });
  expect(JSON.parse(childJsonLine("mocker-0", line, at))).toEqual({ ts: "t", level: "warn", role: "mocker-0", tag: "mocker", msg: "m", args: [1] });
});

test("anything else is wrapped: plain text, a JSON array or number, a broken object, an empty line", () => {
  for (const raw of ["fake role serving on 4000", "[1,2]", "42", '{"msg": "cut', ""]) {
    expect(JSON.parse(childJsonLine("frontend", raw, at))).toEqual({ ts: "2026-01-02T03:04:05.000Z", role: "frontend", level: "info", msg: raw });
  }
});

test("the ready summary: one line, role up, the processes as fields", () => {
  const line = readyJsonLine({ elapsedMs: 1234, mode: "direct", model: "m", namespace: "ns", processes: [{ name: "mocker-0", role: "mocker", url: "http://127.0.0.1:1", pid: 7, rawEndpoints: [["tcp://127.0.0.1:2"]], workerApiUrls: ["http://127.0.0.1:3"] }], discovery: "file /d", stateFile: "/s.json" }, at);
  expect(line).not.toContain("\n");
  expect(JSON.parse(line)).toEqual({
    ts: "2026-01-02T03:04:05.000Z", level: "info", role: "up", msg: "kvcr-mock stack ready in 1.2 s", mode: "direct", model: "m", namespace: "ns",
    processes: [{ name: "mocker-0", role: "mocker", url: "http://127.0.0.1:1", pid: 7, raw_endpoints: [["tcp://127.0.0.1:2"]], worker_api_urls: ["http://127.0.0.1:3"] }], discovery: "file /d", state_file: "/s.json",
  });
});

test("the ready summary with frontend replicas lists them all; with one, frontend_url alone", () => {
  const base = { elapsedMs: 1, mode: "direct", model: "m", namespace: "ns", processes: [], discovery: "file /d", frontendUrl: "http://h:1" };
  expect(JSON.parse(readyJsonLine({ ...base, frontendUrls: ["http://h:1", "http://h:2"] }, at))).toMatchObject({ frontend_url: "http://h:1", frontend_urls: ["http://h:1", "http://h:2"] });
  expect(JSON.parse(readyJsonLine({ ...base, frontendUrls: ["http://h:1"] }, at)).frontend_urls).toBeUndefined();
});
