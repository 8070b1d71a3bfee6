import { describe, expect, test } from "bun:test";
import { ConfigError } from "../../lib/errors.ts";
import { thrownBy } from "../../../test/harness.ts";
import { LIFELINE_WATCH, placeholderProblems, placeholdersIn, renderCommand, shellQuote } from "./template.ts";

/** The command after the lifeline watch every external command starts with. */
const shell = (argv: string[]) => {
  expect(argv.slice(0, 2)).toEqual(["/bin/sh", "-c"]);
  expect(argv[2]!.startsWith(LIFELINE_WATCH)).toBe(true);
  return argv[2]!.slice(LIFELINE_WATCH.length);
};

describe("role command templates", () => {
  test("values are one shell word each; a list is a word per item, {name:--flag} repeats the flag, --flag= joins it", () => {
    const values = { port: "8000", model: "my model", worker_api_urls: ["http://a:1", "http://b:2"], kvcr_mock: "'/x y/kvcr' --z" };
    expect(shell(renderCommand("r --port {port} --model {model} {worker_api_urls} {worker_api_urls:--w} {worker_api_urls:--u=} {kvcr_mock}", values, "--frontend-cmd", "frontend"))).toBe(
      "exec r --port 8000 --model 'my model' http://a:1 http://b:2 --w http://a:1 --w http://b:2 --u=http://a:1 --u=http://b:2 '/x y/kvcr' --z",
    );
    expect(shell(renderCommand("r {{port}} {port}}}", { port: "1" }, "--frontend-cmd", "frontend"))).toBe("exec r {port} 1}");
    const pairs = { prefill_bootstrap: [["http://a:1", "9001"], ["http://b:2", "9002"]] };
    expect(shell(renderCommand("r {prefill_bootstrap} {prefill_bootstrap:--prefill} {prefill_bootstrap:--p=}", pairs, "--frontend-cmd", "frontend"))).toBe(
      "exec r http://a:1 9001 http://b:2 9002 --prefill http://a:1 9001 --prefill http://b:2 9002 --p=http://a:1 9001 --p=http://b:2 9002",
    );
    expect(shell(renderCommand("r {worker_api_urls}", { worker_api_urls: [] }, "--frontend-cmd", "frontend"))).toBe("exec r ");
    expect(shell(renderCommand("r {port}", {}, "--frontend-cmd", "frontend"))).toBe("exec r ''");
  });

  test("the names used, and what is wrong with them for the role", () => {
    expect([...placeholdersIn("a {port} {{x}} {worker_api_urls:--f} {port}")]).toEqual(["port", "worker_api_urls"]);
    expect(placeholderProblems("a {port} {worker_api_urls_csv} {metrics_port}", "frontend", "--frontend-cmd")).toEqual([]);
    expect(placeholderProblems("a {worker_api_urls}", "mocker", "--mocker-cmd")[0]).toStartWith("--mocker-cmd: unknown placeholder(s) {worker_api_urls}; known: {kvcr_mock}");
    expect(placeholderProblems("a {x} {y}", "agent", "--agent-cmd")[0]).toStartWith("--agent-cmd: unknown placeholder(s) {x}, {y}; known:");
    expect(placeholderProblems("a {model:--m}", "agent", "--agent-cmd")).toEqual(["--agent-cmd: {model:--m}: only {worker_api_urls}, {prefill_api_urls}, {decode_api_urls}, {prefill_bootstrap}, {worker_kv_event_sources} take a flag to repeat; {model} is one value"]);
    expect(placeholderProblems("a {nope:--m}", "agent", "--agent-cmd")).toHaveLength(1); // unknown, not also a flag problem
    for (const bad of ["--w x", ""]) expect(placeholderProblems(`a {worker_api_urls:${bad}}`, "frontend", "--frontend-cmd")).toEqual([`--frontend-cmd: {worker_api_urls:${bad}}: the flag to repeat must be one word, e.g. {worker_api_urls:--worker-url}`]);
    expect(thrownBy(ConfigError, () => renderCommand("a {x}", {}, "--agent-cmd", "agent")).problems).toEqual(placeholderProblems("a {x}", "agent", "--agent-cmd"));
  });

  test("shellQuote leaves plain words alone and single-quotes the rest", () => {
    expect(["a-b_c.d/e:f,g@h%i+j=k", "", "a b", "it's", "$x"].map(shellQuote)).toEqual(["a-b_c.d/e:f,g@h%i+j=k", "''", "'a b'", "'it'\\''s'", "'$x'"]);
  });
});
