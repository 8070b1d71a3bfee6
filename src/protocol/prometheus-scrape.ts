// Reading another server's Prometheus text exposition (format 0.0.4): each sample's name, labels
// and value. Tolerant, as a scraper is: comments, blank lines and lines it cannot read are skipped.

export interface ScrapedSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\S+)?\s*$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function scrapeSamples(text: string): ScrapedSample[] {
  const out: ScrapedSample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = SAMPLE.exec(line);
    if (m === null) continue;
    const value = m[4] === "+Inf" ? Infinity : m[4] === "-Inf" ? -Infinity : Number(m[4]);
    if (Number.isNaN(value) && m[4] !== "NaN") continue;
    const labels: Record<string, string> = {};
    if (m[3] !== undefined) for (const l of m[3].matchAll(LABEL)) labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
    out.push({ name: m[1]!, labels, value });
  }
  return out;
}

/** The sum of a metric's samples over every label set (0 when it has none). */
export function sumOf(samples: readonly ScrapedSample[], name: string): number {
  let s = 0;
  for (const x of samples) if (x.name === name && Number.isFinite(x.value)) s += x.value;
  return s;
}
