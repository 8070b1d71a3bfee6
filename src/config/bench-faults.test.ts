// bench's fault and audit flags: when the audit runs and at what interval, --mocker-urls and
// --compare checked with messages that name the flag and the value.
import { describe, expect, test } from "bun:test";
import { ConfigError } from "../lib/errors.ts";
import { benchOptions, benchProblems, type BenchConfig } from "./bench.ts";
import { auditIntervalOf } from "./bench.ts";
import { loadConfig } from "./load.ts";

function problems(argv: string[]): string[] {
  try {
    loadConfig(benchOptions, { argv, env: {} }, (c) => benchProblems(c as BenchConfig));
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
  return [];
}

describe("bench fault and audit flags", () => {
  test("the audit runs with --audit, --faults or --audit-interval, every second unless given", () => {
    expect(auditIntervalOf({ audit: false, faults: undefined, auditInterval: undefined })).toBeUndefined();
    expect(auditIntervalOf({ audit: true, faults: undefined, auditInterval: undefined })).toBe(1);
    expect(auditIntervalOf({ audit: false, faults: "f.yaml", auditInterval: undefined })).toBe(1);
    expect(auditIntervalOf({ audit: false, faults: undefined, auditInterval: 0.5 })).toBe(0.5);
  });

  test("bad values are named", () => {
    expect(problems(["--url", "http://x:1", "--audit", "--mocker-urls", "http://a:1,ftp://b"])).toEqual(['--mocker-urls: got "ftp://b", expected an http(s) base URL such as http://127.0.0.1:8100']);
    expect(problems(["--url", "http://x:1", "--mocker-urls", "http://a:1"])).toEqual(["--mocker-urls: only used by the audit and fault schedules; add --audit or --faults"]);
    expect(problems(["--url", "http://x:1", "--audit-interval", "0"])[0]).toMatch(/^--audit-interval/);
    expect(problems(["--compare", "a.json"])).toEqual(['--compare: got "a.json", expected two result files, comma-separated: A.json,B.json']);
    expect(problems(["--compare", "a.json,b.json"])).toEqual([]);
  });
});
