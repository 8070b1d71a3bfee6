// Reading one field of a trace row under any of its names (Dynamo and aiperf spell some fields two
// ways): the value, undefined when absent, or a message naming the field and what is wrong.

export type FieldResult<T> = { value?: T; error?: string };

export type Row = Record<string, unknown>;

/** The first of `names` the row has (a later alias is only read when the earlier is absent). */
function present(o: Row, names: readonly string[]): [string, unknown] | undefined {
  for (const n of names) if (o[n] !== undefined && o[n] !== null) return [n, o[n]];
  return undefined;
}

/** A finite number ≥ 0 (integer when asked), under any of `names`. */
export function numberField(o: Row, names: readonly string[], integer = false, min = 0): FieldResult<number> {
  const hit = present(o, names);
  if (hit === undefined) return {};
  const [name, v] = hit;
  if (typeof v !== "number" || !Number.isFinite(v) || (integer && !Number.isInteger(v))) return { error: `${name} must be ${integer ? "an integer" : "a number"}, got ${JSON.stringify(v)}` };
  if (v < min) return { error: `${name} must be at least ${min}, got ${v}` };
  return { value: v };
}

/** A session or chat id: a string or an integer, as a key. */
export function idField(o: Row, name: string): FieldResult<string> {
  const v = o[name];
  if (v === undefined || v === null) return {};
  if (typeof v === "string" && v !== "") return { value: v };
  if (typeof v === "number" && Number.isInteger(v)) return { value: String(v) };
  return { error: `${name} must be a non-empty string or an integer, got ${JSON.stringify(v)}` };
}

const U32_MAX = 0xffffffff;

/** hash_ids as block ids; `need` tokens must fit in them at `blockSize` tokens per id. */
export function hashIdsField(o: Row, need: number, blockSize: number, sizeFlag: string): FieldResult<Uint32Array> {
  const ids = o.hash_ids;
  if (ids === undefined || ids === null) return { error: "missing field hash_ids" };
  if (!Array.isArray(ids)) return { error: `hash_ids must be an array of integers, got ${JSON.stringify(ids)}` };
  const out = new Uint32Array(ids.length);
  for (let i = 0; i < ids.length; i++) {
    const id: unknown = ids[i];
    if (typeof id !== "number" || !Number.isInteger(id) || id < 0 || id > U32_MAX) return { error: `hash_ids[${i}] must be an integer from 0 to ${U32_MAX}, got ${JSON.stringify(id)}` };
    out[i] = id;
  }
  if (need > ids.length * blockSize) return { error: `input_length ${need} is longer than its ${ids.length} hash ids allow at ${sizeFlag} (at most ${ids.length * blockSize} tokens)` };
  return { value: out };
}

/** One line as a JSON object, or a message. */
export function parseObject(line: string): Row | string {
  let doc: unknown;
  try {
    doc = JSON.parse(line);
  } catch (err) {
    return `invalid JSON: ${(err as Error).message}`;
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) return `expected a JSON object, got ${Array.isArray(doc) ? "an array" : JSON.stringify(doc)}`;
  return doc as Row;
}

/** Non-empty lines with their 1-based line numbers. */
export function* jsonLines(text: string): Generator<{ line: number; text: string }> {
  let lineNo = 0;
  let pos = 0;
  while (pos <= text.length) {
    let end = text.indexOf("\n", pos);
    if (end === -1) end = text.length;
    lineNo++;
    const line = text.slice(pos, end).trim();
    pos = end + 1;
    if (line !== "") yield { line: lineNo, text: line };
  }
}

/** A JSONL text's rows that are JSON objects; any other row is an error of its line. `read.lines` counts every row. */
export function* objectRows(text: string, errors: { line: number; message: string }[], read: { lines: number }): Generator<{ line: number; o: Row }> {
  for (const { line, text: raw } of jsonLines(text)) {
    read.lines++;
    const o = parseObject(raw);
    if (typeof o === "string") errors.push({ line, message: o });
    else yield { line, o };
  }
}
