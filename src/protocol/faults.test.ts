// The fault body as the fault API takes it: defaults filled, each kind's own fields only, and every
// refusal naming the field that is wrong.
import { describe, expect, test } from "bun:test";
import { checkFault, FAULT_KINDS, faultFamily } from "./faults.ts";

const problem = (body: unknown) => {
  const r = checkFault(body);
  if (r.ok) throw new Error(`accepted ${JSON.stringify(body)}`);
  return r.problem;
};

describe("fault bodies", () => {
  test("defaults fill in: start 0, share and rate 1, status 503, after_tokens 1, exit code 1", () => {
    expect(checkFault({ kind: "drop_batches" })).toEqual({ ok: true, value: { kind: "drop_batches", start: 0, share: 1, renumber: false } });
    expect(checkFault({ kind: "http_error", count: 2 })).toEqual({ ok: true, value: { kind: "http_error", start: 0, count: 2, rate: 1, status: 503 } });
    expect(checkFault({ kind: "cut_stream" })).toMatchObject({ ok: true, value: { rate: 1, after_tokens: 1 } });
    expect(checkFault({ kind: "exit" })).toMatchObject({ ok: true, value: { code: 1 } });
    expect(checkFault({ kind: "pause", for: 2, target: { worker: "kvcr-slot-0", rank: 1 } })).toMatchObject({ ok: true, value: { for: 2, target: { worker: "kvcr-slot-0", rank: 1 } } });
    expect(checkFault({ kind: "latency", ttft_ms: { dist: "uniform", min: 5, max: 10 }, per_token_ms: { dist: "exponential", mean: 2 } })).toMatchObject({ ok: true });
  });

  test("every kind has a family and an accepted minimal body", () => {
    const minimal: Record<string, object> = { delay_batches: { ms: 10 }, slow: { factor: 2 } };
    for (const kind of FAULT_KINDS) {
      expect(["event", "http", "process"]).toContain(faultFamily(kind));
      expect(checkFault({ kind, ...minimal[kind] }).ok).toBe(true);
    }
  });

  test("bounds are inclusive: a uniform from 0, a delay of an hour, a slowdown of 1000, status 500; latency defaults to 0 ms", () => {
    expect(checkFault({ kind: "latency", ttft_ms: { dist: "uniform", min: 0, max: 0 } }).ok).toBe(true);
    expect(checkFault({ kind: "delay_batches", ms: 3_600_000 }).ok).toBe(true);
    expect(problem({ kind: "delay_batches", ms: 3_600_001 })).toStartWith("ms:");
    expect(checkFault({ kind: "slow", factor: 1000 }).ok).toBe(true);
    expect(problem({ kind: "slow", factor: 1000.5 })).toStartWith("factor:");
    expect(checkFault({ kind: "http_error", status: 500 })).toMatchObject({ ok: true, value: { status: 500 } });
    expect(checkFault({ kind: "http_error", status: 429 })).toMatchObject({ ok: true, value: { status: 429 } });
    expect(checkFault({ kind: "latency" })).toMatchObject({ ok: true, value: { ttft_ms: 0, per_token_ms: 0 } });
  });

  test("bad bodies are refused naming the field", () => {
    expect(problem([])).toStartWith("(body):");
    expect(problem({})).toStartWith("kind:");
    expect(problem({ kind: "explode" })).toStartWith("kind: expected one of drop_batches");
    expect(problem({ kind: "http_error", rate: 1.5 })).toStartWith("rate:");
    expect(problem({ kind: "http_error", status: 404 })).toStartWith("status:");
    expect(problem({ kind: "drop_batches", share: -0.1 })).toStartWith("share:");
    expect(problem({ kind: "drop_batches", for: 1, count: 3 })).toBe("count: give for or count, not both");
    expect(problem({ kind: "drop_batches", count: 0 })).toStartWith("count:");
    expect(problem({ kind: "pause", start: -1 })).toStartWith("start:");
    expect(problem({ kind: "pause", target: { worker: -1 } })).toStartWith("target.worker:");
    expect(problem({ kind: "pause", target: { rank: "x" } })).toStartWith("target.rank:");
    expect(problem({ kind: "pause", target: { node: 1 } })).toBe("target.node: not a field of pause faults");
    expect(problem({ kind: "exit", for: 3 })).toBe("for: not a field of exit faults");
    expect(problem({ kind: "pause", count: 3 })).toBe("count: not a field of pause faults");
    expect(problem({ kind: "delay_batches" })).toStartWith("ms:");
    expect(problem({ kind: "slow", factor: 0 })).toStartWith("factor:");
    expect(problem({ kind: "latency", ttft_ms: { dist: "normal" } })).toStartWith("ttft_ms:");
    expect(problem({ kind: "cut_stream", after_tokens: 1.5 })).toStartWith("after_tokens:");
    expect(problem({ kind: "exit", code: 256 })).toStartWith("code:");
  });
});
