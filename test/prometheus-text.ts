// A strict reader of Prometheus text exposition (0.0.4) for tests: every sample belongs to the
// family its HELP/TYPE lines announce, families are contiguous, names and labels are valid, and each
// histogram series has ascending cumulative buckets ending in +Inf equal to its _count. Throws with
// the offending line number.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: string;
  help: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export function parsePrometheusText(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  let current: Family | undefined;
  const fail = (i: number, why: string): never => {
    throw new Error(`line ${i + 1}: ${why}: ${JSON.stringify(text.split("\n")[i])}`);
  };
  const lines = text.split("\n");
  if (lines.at(-1) !== "") throw new Error("exposition must end with a newline");
  lines.forEach((line, i) => {
    if (line === "") return;
    if (line.startsWith("# HELP ")) {
      const [name = "", ...help] = line.slice(7).split(" ");
      if (!NAME.test(name)) fail(i, "bad family name");
      if (families.has(name)) fail(i, "family announced twice (families must be contiguous)");
      current = { name, type: "untyped", help: help.join(" "), samples: [] };
      families.set(name, current);
      return;
    }
    if (line.startsWith("# TYPE ")) {
      const [name, type] = line.slice(7).split(" ");
      if (!current || current.name !== name) fail(i, "TYPE without its HELP");
      if (!["counter", "gauge", "histogram", "summary", "untyped"].includes(type ?? "")) fail(i, "bad type");
      current!.type = type!;
      return;
    }
    if (line.startsWith("#")) return;
    const m = /^([^{\s]+)(?:\{(.*)\})? (\S+)(?: \d+)?$/.exec(line);
    if (!m) return fail(i, "not a sample line");
    const [, name = "", labelText, valueText = ""] = m;
    if (!NAME.test(name)) fail(i, "bad metric name");
    if (!current) return fail(i, "sample before any HELP/TYPE");
    const suffixes = current.type === "histogram" ? ["_bucket", "_sum", "_count"] : current.type === "summary" ? ["", "_sum", "_count"] : [""];
    if (!suffixes.some((s) => name === current!.name + s)) fail(i, `sample does not belong to family ${current.name}`);
    const value = valueText === "+Inf" ? Infinity : valueText === "-Inf" ? -Infinity : Number(valueText);
    if (Number.isNaN(value) && valueText !== "NaN") fail(i, "bad value");
    current.samples.push({ name, labels: parseLabels(labelText ?? "", (why) => fail(i, why)), value });
  });
  for (const f of families.values()) if (f.type === "histogram") checkHistogram(f);
  return families;
}

function parseLabels(text: string, fail: (why: string) => never): Record<string, string> {
  const out: Record<string, string> = {};
  let i = 0;
  while (i < text.length) {
    const eq = text.indexOf("=", i);
    if (eq < 0) fail("label without =");
    const name = text.slice(i, eq);
    if (!LABEL.test(name)) fail(`bad label name ${name}`);
    if (text[eq + 1] !== '"') fail("label value not quoted");
    let j = eq + 2;
    let value = "";
    for (; j < text.length && text[j] !== '"'; j++) {
      if (text[j] === "\\") {
        const next = text[++j];
        value += next === "n" ? "\n" : next;
      } else value += text[j];
    }
    if (j >= text.length) fail("unterminated label value");
    if (name in out) fail(`label ${name} repeated`);
    out[name] = value;
    i = j + 1;
    if (text[i] === ",") i++;
  }
  return out;
}

/** Per series (labels without `le`): buckets ascend in `le` and count, +Inf last and equal to _count. */
function checkHistogram(f: Family): void {
  const series = new Map<string, { les: number[]; counts: number[]; count?: number; sum?: number }>();
  for (const s of f.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    let e = series.get(key);
    if (!e) series.set(key, (e = { les: [], counts: [] }));
    if (s.name.endsWith("_bucket")) {
      if (le === undefined) throw new Error(`${f.name}: bucket without le`);
      e.les.push(le === "+Inf" ? Infinity : Number(le));
      e.counts.push(s.value);
    } else if (s.name.endsWith("_count")) e.count = s.value;
    else e.sum = s.value;
  }
  for (const [key, e] of series) {
    const where = `${f.name}${key}`;
    if (e.les.at(-1) !== Infinity) throw new Error(`${where}: last bucket is not +Inf`);
    for (let i = 1; i < e.les.length; i++) {
      if (!(e.les[i]! > e.les[i - 1]!)) throw new Error(`${where}: le bounds not ascending`);
      if (e.counts[i]! < e.counts[i - 1]!) throw new Error(`${where}: bucket counts not cumulative`);
    }
    if (e.count === undefined || e.sum === undefined) throw new Error(`${where}: _sum or _count missing`);
    if (e.counts.at(-1) !== e.count) throw new Error(`${where}: +Inf bucket ${e.counts.at(-1)} != _count ${e.count}`);
  }
}

/** The exposed series names of a family: a histogram's _bucket/_sum/_count, else the family name. */
export function seriesNames(f: Family): string[] {
  return f.type === "histogram" ? [`${f.name}_bucket`, `${f.name}_sum`, `${f.name}_count`] : [f.name];
}
