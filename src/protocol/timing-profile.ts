// A step-time profile, with where it came from: measured forward-pass times as tables, or a
// parametric step model fitted to one measured run (`calibrate`). The schema is documented in
// docs/timing.md; profileProblems names every field that breaks it.

export const PROFILE_SCHEMA = "kvcr-mock/timing-profile/1";

export interface ProfileProvenance {
  source: string;
  system: string;
  framework: string;
  frameworkVersion: string;
  model: string;
  /** When the source states it (Dynamo's planner data does not). */
  tensorParallelSize?: number;
  licence: string;
  generatedBy?: string;
  /** How the tables were made, in words. */
  notes?: string;
}

/** The model's KV geometry on one rank: vLLM sizes its GPU tier from it and --gpu-memory-utilization. */
export interface ProfileKv {
  kvBytesPerToken: number;
  gpuMemoryBytes: number;
  /** Weights, activations and runtime memory: what the KV cache cannot use. */
  nonKvBytes: number;
}

/** ms[i][j]: one step prefilling tokens[i] new tokens after context[j] already computed ones. */
export interface PrefillTable {
  tokens: number[];
  context: number[];
  ms: number[][];
}

/**
 * ms[i][j]: one decode step. `x: "batch"`: batch[i] requests, each at mean context context[j];
 * `x: "activeKvTokens"` (Dynamo's profiler data): activeKvTokens[i] context tokens summed over the
 * batch, at mean context context[j].
 */
export type DecodeTable =
  | { x: "batch"; batch: number[]; context: number[]; ms: number[][] }
  | { x: "activeKvTokens"; activeKvTokens: number[]; context: number[]; ms: number[][] };

/**
 * A step's time as a sum of costs (ms): one per step that computes anything, one more when it
 * prefills and one more when it decodes (a GPU that runs the two as one pass needs neither; a
 * mocker that adds a prefill pass and a decode pass, as Dynamo's does, needs both), per new
 * prompt token, per attended pair (a new token and each token before it, its own chunk included), per decoding
 * request and per context token a decode attends; and once per request before it can be
 * scheduled (input processing, the HTTP hop). Linear, so it holds past what was observed.
 */
export interface ParametricModel {
  stepMs: number;
  prefillStepMs: number;
  decodeStepMs: number;
  prefillTokenMs: number;
  prefillAttentionMs: number;
  decodeRequestMs: number;
  decodeContextMs: number;
  requestMs: number;
}

export const PARAMETRIC_TERMS = ["stepMs", "prefillStepMs", "decodeStepMs", "prefillTokenMs", "prefillAttentionMs", "decodeRequestMs", "decodeContextMs", "requestMs"] as const;

/** The largest step shapes the fitted run reached: past them the model is extrapolated, as `notes` say. */
export interface ObservedRange {
  prefillTokens: number;
  prefillContext: number;
  decodeBatch: number;
  decodeContext: number;
}

interface ProfileCommon {
  schema: typeof PROFILE_SCHEMA;
  name: string;
  provenance: ProfileProvenance;
  kv?: ProfileKv;
}

export interface TablesProfile extends ProfileCommon {
  /** Absent in profiles written before the parametric form existed. */
  form?: "tables";
  interpolation: "bilinear";
  prefill: PrefillTable;
  decode: DecodeTable;
}

export interface ParametricProfile extends ProfileCommon {
  form: "parametric";
  parametric: ParametricModel;
  observed: ObservedRange;
  /** What the fit reported (held-out errors and the like), kept as written. */
  fit?: Record<string, unknown>;
}

export type TimingProfile = TablesProfile | ParametricProfile;

export function isParametric(p: TimingProfile): p is ParametricProfile {
  return p.form === "parametric";
}

const PROVENANCE_TEXT = ["source", "system", "framework", "frameworkVersion", "model", "licence"] as const;

/** Every way `p` breaks the schema, one line each naming the field and the value. */
export function profileProblems(p: unknown): string[] {
  if (!isObject(p)) return [`profile: got ${show(p)}, expected a JSON object`];
  const out: string[] = [];
  if (p.schema !== PROFILE_SCHEMA) out.push(`schema: got ${show(p.schema)}, expected "${PROFILE_SCHEMA}"`);
  if (typeof p.name !== "string" || p.name === "") out.push(`name: got ${show(p.name)}, expected a non-empty string`);
  if (p.form !== undefined && p.form !== "tables" && p.form !== "parametric") out.push(`form: got ${show(p.form)}, expected "tables" or "parametric"`);
  const prov = p.provenance;
  if (!isObject(prov)) out.push(`provenance: got ${show(prov)}, expected an object`);
  else {
    for (const k of PROVENANCE_TEXT) if (typeof prov[k] !== "string" || prov[k] === "") out.push(`provenance.${k}: got ${show(prov[k])}, expected a non-empty string`);
    if (prov.tensorParallelSize !== undefined && !isPositiveInt(prov.tensorParallelSize)) out.push(`provenance.tensorParallelSize: got ${show(prov.tensorParallelSize)}, expected an integer ≥ 1`);
  }
  if (p.kv !== undefined) {
    if (!isObject(p.kv)) out.push(`kv: got ${show(p.kv)}, expected an object`);
    else {
      for (const k of ["kvBytesPerToken", "gpuMemoryBytes"] as const) if (!isPositiveInt(p.kv[k])) out.push(`kv.${k}: got ${show(p.kv[k])}, expected an integer ≥ 1`);
      if (!(typeof p.kv.nonKvBytes === "number" && Number.isInteger(p.kv.nonKvBytes) && p.kv.nonKvBytes >= 0)) out.push(`kv.nonKvBytes: got ${show(p.kv.nonKvBytes)}, expected an integer ≥ 0`);
    }
  }
  if (p.form === "parametric") parametricProblems(p, out);
  else tablesProblems(p, out);
  return out;
}

function tablesProblems(p: Record<string, unknown>, out: string[]): void {
  if (p.interpolation !== "bilinear") out.push(`interpolation: got ${show(p.interpolation)}, expected "bilinear"`);
  if (!isObject(p.prefill)) out.push(`prefill: got ${show(p.prefill)}, expected an object`);
  else tableProblems("prefill", p.prefill, "tokens", out);
  if (!isObject(p.decode)) out.push(`decode: got ${show(p.decode)}, expected an object`);
  else if (p.decode.x !== "batch" && p.decode.x !== "activeKvTokens") out.push(`decode.x: got ${show(p.decode.x)}, expected "batch" or "activeKvTokens"`);
  else tableProblems("decode", p.decode, p.decode.x, out);
}

/** Every cost a finite number ≥ 0, and the observed range as counts ≥ 0. */
function parametricProblems(p: Record<string, unknown>, out: string[]): void {
  const m = p.parametric;
  if (!isObject(m)) out.push(`parametric: got ${show(m)}, expected an object of ${PARAMETRIC_TERMS.join(", ")}`);
  else for (const k of PARAMETRIC_TERMS) if (!isNonNegative(m[k])) out.push(`parametric.${k}: got ${show(m[k])}, expected a time in ms ≥ 0`);
  const o = p.observed;
  if (!isObject(o)) out.push(`observed: got ${show(o)}, expected an object`);
  else for (const k of ["prefillTokens", "prefillContext", "decodeBatch", "decodeContext"] as const) if (!isNonNegative(o[k])) out.push(`observed.${k}: got ${show(o[k])}, expected a number ≥ 0`);
  if (p.fit !== undefined && !isObject(p.fit)) out.push(`fit: got ${show(p.fit)}, expected an object`);
}

/**
 * A table: two increasing non-negative axes, a grid of non-negative times, and times that do not
 * fall as the first axis grows (more tokens or more requests never make a step cheaper).
 */
function tableProblems(name: string, t: Record<string, unknown>, first: string, out: string[]): void {
  const before = out.length;
  for (const axis of [first, "context"]) axisProblems(`${name}.${axis}`, t[axis], out);
  if (out.length > before) return;
  const rows = (t[first] as number[]).length;
  const cols = (t.context as number[]).length;
  const ms = t.ms;
  if (!Array.isArray(ms) || ms.length !== rows) {
    out.push(`${name}.ms: got ${Array.isArray(ms) ? `${ms.length} rows` : show(ms)}, expected ${rows} rows (one per ${name}.${first})`);
    return;
  }
  for (let i = 0; i < rows; i++) {
    const row = ms[i];
    if (!Array.isArray(row) || row.length !== cols) {
      out.push(`${name}.ms[${i}]: got ${Array.isArray(row) ? `${row.length} values` : show(row)}, expected ${cols} (one per ${name}.context)`);
      return;
    }
    for (let j = 0; j < cols; j++) {
      const v = row[j];
      if (typeof v !== "number" || !Number.isFinite(v) || v < 0) out.push(`${name}.ms[${i}][${j}]: got ${show(v)}, expected a time in ms ≥ 0`);
      else if (i > 0 && v < (ms[i - 1] as number[])[j]!) {
        out.push(`${name}.ms[${i}][${j}]: got ${v}, below ${name}.ms[${i - 1}][${j}] ${(ms[i - 1] as number[])[j]}: times must not fall as ${name}.${first} grows`);
      }
    }
  }
}

function axisProblems(field: string, a: unknown, out: string[]): void {
  if (!Array.isArray(a) || a.length === 0) {
    out.push(`${field}: got ${show(a)}, expected a non-empty array of numbers`);
    return;
  }
  for (let i = 0; i < a.length; i++) {
    const v = a[i];
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0) out.push(`${field}[${i}]: got ${show(v)}, expected a number ≥ 0`);
    else if (i > 0 && !(v > (a[i - 1] as number))) out.push(`${field}[${i}]: got ${v} after ${a[i - 1]}, expected increasing values`);
  }
}

/**
 * G1 blocks per rank as vLLM sizes them: the memory --gpu-memory-utilization grants, less what is
 * not KV, in blocks of `blockSize` tokens. Undefined when the profile has no geometry or no room.
 */
export function gpuBlocksFor(kv: ProfileKv, gpuMemoryUtilization: number, blockSize: number): number | undefined {
  const budget = kv.gpuMemoryBytes * gpuMemoryUtilization - kv.nonKvBytes;
  const blocks = Math.floor(budget / (kv.kvBytesPerToken * blockSize));
  return blocks >= 1 ? blocks : undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function isNonNegative(v: unknown): boolean {
  return typeof v === "number" && Number.isFinite(v) && v >= 0;
}

function isPositiveInt(v: unknown): boolean {
  return typeof v === "number" && Number.isInteger(v) && v >= 1;
}

function show(v: unknown): string {
  if (v === undefined) return "nothing";
  const s = JSON.stringify(v);
  return s.length > 40 ? `${s.slice(0, 37)}...` : s;
}
