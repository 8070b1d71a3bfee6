// One fault as POSTed to a mocker's `/admin/faults` (docs/http-api.md, "Faults"): its kind, which
// workers and ranks it hits, when it starts, how long or how many times it acts, and the kind's own
// parameters. Validated here so the mocker, `up` and `bench` schedules reject the same bad input
// with the same message, naming the field.
import * as v from "valibot";
import { checkRecord, type RecordCheck } from "./records.ts";

/** Event-stream faults act on a rank's raw PUB / replay ROUTER; HTTP faults on POST /v1/generate; process faults on the process. */
export const FAULT_FAMILIES = {
  event: ["drop_batches", "delay_batches", "duplicate_batches", "reorder_batches", "reset_seq", "stop_publishing", "clear_all", "corrupt_payload", "no_replay"],
  http: ["http_error", "latency", "cut_stream", "hang", "slow"],
  process: ["pause", "lease_stop", "exit"],
} as const;
export type FaultFamily = keyof typeof FAULT_FAMILIES;
export const FAULT_KINDS = [...FAULT_FAMILIES.event, ...FAULT_FAMILIES.http, ...FAULT_FAMILIES.process] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export function faultFamily(kind: FaultKind): FaultFamily {
  return (FAULT_FAMILIES.event as readonly string[]).includes(kind) ? "event" : (FAULT_FAMILIES.http as readonly string[]).includes(kind) ? "http" : "process";
}

const nonNegInt = v.pipe(v.number(), v.integer(), v.minValue(0));
const share = v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(1)), 1);
const seconds = v.pipe(v.number(), v.minValue(0), v.maxValue(86_400 * 365));

/** No target: every worker and rank of the process. `worker` is the worker's index in its process or its worker id (discovery). */
const TargetSchema = v.strictObject({
  worker: v.optional(v.union([nonNegInt, v.pipe(v.string(), v.nonEmpty())], "expected a worker index (integer ≥ 0) or a worker id")),
  rank: v.optional(nonNegInt),
});
export type FaultTarget = v.InferOutput<typeof TargetSchema>;

/** A fixed number of ms, or a distribution sampled per request (uniform between min and max, exponential with a mean). */
export const MsDistributionSchema = v.union(
  [
    v.pipe(v.number(), v.minValue(0)),
    v.strictObject({ dist: v.literal("uniform"), min: v.pipe(v.number(), v.minValue(0)), max: v.pipe(v.number(), v.minValue(0)) }),
    v.strictObject({ dist: v.literal("exponential"), mean: v.pipe(v.number(), v.minValue(0)) }),
  ],
  'expected ms ≥ 0, {"dist": "uniform", "min", "max"} or {"dist": "exponential", "mean"}',
);
export type MsDistribution = v.InferOutput<typeof MsDistributionSchema>;

// What every fault has; `for` / `count` only where the kind can last (instant kinds act once).
const base = { target: v.optional(TargetSchema), start: v.optional(seconds, 0) };
const lasting = { ...base, for: v.optional(v.pipe(seconds, v.minValue(0.001))) };
const counted = { ...lasting, count: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))) };

const kind = <K extends FaultKind>(k: K) => v.literal(k);

const FaultVariants = v.variant(
  "kind",
  [
    // Event stream (each batch is one publish of one rank).
    v.strictObject({ kind: kind("drop_batches"), ...counted, share, renumber: v.optional(v.boolean(), false) }),
    v.strictObject({ kind: kind("delay_batches"), ...counted, ms: v.pipe(v.number(), v.minValue(0), v.maxValue(3_600_000)) }),
    v.strictObject({ kind: kind("duplicate_batches"), ...counted, share }),
    v.strictObject({ kind: kind("reorder_batches"), ...counted }),
    v.strictObject({ kind: kind("reset_seq"), ...base }),
    v.strictObject({ kind: kind("stop_publishing"), ...lasting }),
    v.strictObject({ kind: kind("clear_all"), ...base }),
    v.strictObject({ kind: kind("corrupt_payload"), ...counted, share }),
    v.strictObject({ kind: kind("no_replay"), ...lasting }),
    // HTTP (each request is one POST /v1/generate to the targeted ranks).
    v.strictObject({ kind: kind("http_error"), ...counted, rate: share, status: v.optional(v.picklist([429, 500, 503]), 503) }),
    v.strictObject({ kind: kind("latency"), ...counted, ttft_ms: v.optional(MsDistributionSchema, 0), per_token_ms: v.optional(MsDistributionSchema, 0) }),
    v.strictObject({ kind: kind("cut_stream"), ...counted, rate: share, after_tokens: v.optional(nonNegInt, 1) }),
    v.strictObject({ kind: kind("hang"), ...counted, rate: share }),
    v.strictObject({ kind: kind("slow"), ...lasting, factor: v.pipe(v.number(), v.minValue(0.01), v.maxValue(1000)) }),
    // Process.
    v.strictObject({ kind: kind("pause"), ...lasting }),
    v.strictObject({ kind: kind("lease_stop"), ...lasting }),
    v.strictObject({ kind: kind("exit"), ...base, code: v.optional(v.pipe(nonNegInt, v.maxValue(255)), 1) }),
  ],
  `expected one of ${FAULT_KINDS.join(", ")}`,
);

export const FaultSpecSchema = v.pipe(
  FaultVariants,
  v.forward(
    v.check((f) => !("for" in f && f.for !== undefined && "count" in f && f.count !== undefined), "give for or count, not both"),
    ["count"],
  ),
);
export type FaultSpec = v.InferOutput<typeof FaultSpecSchema>;
export type FaultOf<K extends FaultKind> = Extract<FaultSpec, { kind: K }>;

/** A fault as the mocker holds it: `started_at_ms` is when it takes (or took) effect, wall ms. */
export type ActiveFault = FaultSpec & {
  id: string;
  started_at_ms: number;
  /** When `for` runs out (wall ms). */
  ends_at_ms?: number;
  /** Batches or requests left to hit, with `count`. */
  remaining?: number;
};

/** Validates one fault body; the problem names the field (`rate: Invalid value: …`). */
export function checkFault(value: unknown): RecordCheck<FaultSpec> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { ok: false, problem: "(body): expected a JSON object with a kind" };
  const r = checkRecord(FaultSpecSchema, value);
  if (r.ok) return r;
  // valibot words an unknown key as "Invalid key: Expected never …": say which kind refuses it.
  const unknown = /^([^:]+): Invalid key: Expected never/.exec(r.problem);
  const k = (value as { kind?: unknown }).kind;
  return unknown ? { ok: false, problem: `${unknown[1]}: not a field of ${String(k)} faults` } : r;
}
