// vLLM's --lora-modules in its two meanings: the server's (below) and bench's (adapter names only,
// parseLoraNames). The server's: several entries after one flag, each `name=path` or vLLM's JSON form
// `{"name": …, "path": …, "base_model_name": …}` (joined by spaces, as every variadic flag arrives
// here, so a JSON object may itself hold spaces). Bad entries are problems naming the entry.

export interface LoraModule {
  name: string;
  path: string;
  /** The JSON form's base_model_name, when given (it must be the served model). */
  baseModelName?: string;
}

/** The entries of `text`, or a problem line (flag named). */
export function parseLoraModules(text: string, servedModel: string, flag = "--lora-modules"): LoraModule[] | string {
  const out: LoraModule[] = [];
  const seen = new Set<string>();
  let i = 0;
  while (i < text.length) {
    if (/\s/.test(text[i]!)) {
      i++;
      continue;
    }
    let entry: LoraModule | string;
    if (text[i] === "{") {
      const end = jsonObjectEnd(text, i);
      if (end < 0) return `${flag}: ${JSON.stringify(text.slice(i))} is not a complete JSON object`;
      entry = fromJson(text.slice(i, end), flag);
      i = end;
    } else {
      let end = i;
      while (end < text.length && !/\s/.test(text[end]!)) end++;
      entry = fromPair(text.slice(i, end), flag);
      i = end;
    }
    if (typeof entry === "string") return entry;
    if (entry.baseModelName !== undefined && entry.baseModelName !== servedModel) {
      return `${flag}: adapter ${entry.name} names base_model_name ${JSON.stringify(entry.baseModelName)}, but this worker serves ${JSON.stringify(servedModel)} (--model-name)`;
    }
    if (entry.name === servedModel) return `${flag}: adapter name ${entry.name} is the served model's own name`;
    if (seen.has(entry.name)) return `${flag}: adapter ${entry.name} is given twice`;
    seen.add(entry.name);
    out.push(entry);
  }
  return out;
}

function fromPair(token: string, flag: string): LoraModule | string {
  const eq = token.indexOf("=");
  if (eq <= 0 || eq === token.length - 1) return `${flag}: got ${JSON.stringify(token)}, expected name=path (or a JSON object {"name", "path", "base_model_name"})`;
  return { name: token.slice(0, eq), path: token.slice(eq + 1) };
}

function fromJson(text: string, flag: string): LoraModule | string {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    return `${flag}: ${JSON.stringify(text)} is not valid JSON: ${(err as Error).message}`;
  }
  const o = doc as Record<string, unknown>;
  for (const key of Object.keys(o)) if (key !== "name" && key !== "path" && key !== "base_model_name") return `${flag}: unknown key ${JSON.stringify(key)} in ${text} (expected name, path, base_model_name)`;
  if (typeof o.name !== "string" || o.name === "" || /\s/.test(o.name)) return `${flag}: "name" must be a non-empty string without spaces in ${text}`;
  if (typeof o.path !== "string" || o.path === "") return `${flag}: "path" must be a non-empty string in ${text}`;
  if (o.base_model_name !== undefined && o.base_model_name !== null && typeof o.base_model_name !== "string") return `${flag}: "base_model_name" must be a string in ${text}`;
  return { name: o.name, path: o.path, ...(typeof o.base_model_name === "string" ? { baseModelName: o.base_model_name } : {}) };
}

/** The index just past the JSON object opening at `start` (strings and escapes skipped), or -1. */
function jsonObjectEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{") depth++;
    else if (c === "}" && --depth === 0) return i + 1;
  }
  return -1;
}

/** bench --lora-modules: "a b", "a,b" or both → the adapter names, or a problem line. */
export function parseLoraNames(text: string): string[] | string {
  const names = text.split(/[\s,]+/).filter((n) => n !== "");
  if (names.length === 0) return "--lora-modules: expected one or more LoRA adapter names";
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  if (dup !== undefined) return `--lora-modules: adapter ${dup} is given twice`;
  const pair = names.find((n) => n.includes("="));
  if (pair !== undefined) return `--lora-modules: got ${JSON.stringify(pair)}; bench takes adapter names as the server lists them (the server's own flag takes name=path)`;
  return names;
}

/** --lora-modules-per-worker: a JSON array with one array of --lora-modules names per worker → each worker's modules, or a problem line. */
export function parseModulesPerWorker(text: string, modules: readonly LoraModule[], workers: number): LoraModule[][] | string {
  const flag = "--lora-modules-per-worker";
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    return `${flag}: not valid JSON: ${(err as Error).message}`;
  }
  if (!Array.isArray(doc) || doc.length !== workers) return `${flag}: expected a JSON array of ${workers} arrays (one per worker), got ${text.length > 80 ? `${text.slice(0, 80)}…` : text}`;
  const byName = new Map(modules.map((m) => [m.name, m]));
  const out: LoraModule[][] = [];
  for (let w = 0; w < doc.length; w++) {
    const names = doc[w] as unknown;
    if (!Array.isArray(names)) return `${flag}: worker ${w}: expected an array of adapter names`;
    const mine: LoraModule[] = [];
    for (const n of names) {
      const m = typeof n === "string" ? byName.get(n) : undefined;
      if (m === undefined) return `${flag}: worker ${w}: ${JSON.stringify(n)} is not an adapter of --lora-modules`;
      mine.push(m);
    }
    out.push(mine);
  }
  return out;
}

/** bench --lora-popularity: "zipf:S" with S > 0 → S, or a problem line. */
export function parseZipf(text: string): number | string {
  const m = /^zipf:([0-9]*\.?[0-9]+)$/.exec(text.trim());
  const s = m ? Number(m[1]) : NaN;
  return Number.isFinite(s) && s > 0 ? s : `--lora-popularity: got ${JSON.stringify(text)}, expected zipf:S with S > 0 (e.g. zipf:1.1)`;
}
