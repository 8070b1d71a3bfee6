// The mutation check's mutant generator (pure: text in, mutants out), used by scripts/mutate.ts.
// Each mutant is one targeted textual change to one line of code: a comparison flipped at its
// boundary or in its sense, + and - swapped, a boolean literal flipped, an integer constant moved
// by one or set to 0, a call statement dropped, an if's condition negated. Comments, imports,
// type declarations and string contents are left alone.

export interface Mutant {
  /** 1-based line of the change. */
  line: number;
  /** 0-based column where the change starts. */
  column: number;
  operator: "comparison" | "arithmetic" | "boolean" | "constant" | "drop-call" | "negate-if";
  /** The line before and after the change. */
  original: string;
  mutated: string;
}

const COMPARISON: Record<string, string> = { "<": "<=", "<=": "<", ">": ">=", ">=": ">", "===": "!==", "!==": "===" };
/** Lines that declare rather than compute: nothing on them is mutated. */
const DECLARATION = /^(import\b|export\s+(type|interface)\b|(export\s+)?(declare\s+)?(type|interface)\s)/;
/** Statement lines that are not a bare call, even when they end in `);`. */
const NOT_A_CALL = /^(return|const|let|var|throw|if|else|for|while|do|switch|case|yield|super|new|export|await\s+using|using)\b/;

/** The line with string and template contents (and a trailing // comment) blanked, so operators inside them are not seen. */
export function codeOf(line: string): string {
  let out = "";
  let quote: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === "\\") {
        out += i + 1 < line.length ? "  " : " ";
        i++;
      } else if (c === quote) {
        quote = undefined;
        out += c;
      } else out += " ";
      continue;
    }
    if (c === "/" && line[i + 1] === "/") return out + " ".repeat(line.length - i);
    if (c === '"' || c === "'" || c === "`") quote = c;
    out += c;
  }
  return out;
}

/** Index of the parenthesis closing the one at `open`, or -1 when it closes on another line. */
function closingParen(code: string, open: number): number {
  let depth = 0;
  for (let i = open; i < code.length; i++) {
    if (code[i] === "(") depth++;
    else if (code[i] === ")" && --depth === 0) return i;
  }
  return -1;
}

function lineMutants(line: string, code: string): Omit<Mutant, "line">[] {
  const out: Omit<Mutant, "line">[] = [];
  const at = (column: number, from: string, to: string, operator: Mutant["operator"]) =>
    out.push({ column, operator, original: line, mutated: line.slice(0, column) + to + line.slice(column + from.length) });
  for (const m of code.matchAll(/(?<=\s)(<=|>=|===|!==|<|>)(?=\s)/g)) at(m.index, m[1]!, COMPARISON[m[1]!]!, "comparison");
  for (const m of code.matchAll(/(?<=\s)([+-])(?=\s)/g)) at(m.index, m[1]!, m[1] === "+" ? "-" : "+", "arithmetic");
  for (const m of code.matchAll(/\b(true|false)\b/g)) at(m.index, m[1]!, m[1] === "true" ? "false" : "true", "boolean");
  for (const m of code.matchAll(/(?<![\w$.])\d[\d_]*(?![\w$.])/g)) {
    const n = Number(m[0].replaceAll("_", ""));
    const to = new Set([n + 1, n - 1, 0].filter((x) => x >= 0 && x !== n));
    for (const x of to) at(m.index, m[0], String(x), "constant");
  }
  const trimmed = code.trim();
  const indent = line.length - line.trimStart().length;
  if (/^(await\s+)?[\w$.[\]!?]+\(.*\);$/.test(trimmed) && !NOT_A_CALL.test(trimmed)) {
    const open = code.indexOf("(");
    // The whole statement is this line: dropping it leaves an empty statement in its place.
    if (closingParen(code, open) === code.trimEnd().length - 2) out.push({ column: indent, operator: "drop-call", original: line, mutated: `${line.slice(0, indent)};` });
  }
  const cond = /^(\s*(?:\}\s*else\s+)?if\s*)\(/.exec(code);
  if (cond) {
    const open = cond[1]!.length;
    const close = closingParen(code, open);
    if (close > 0) out.push({ column: open, operator: "negate-if", original: line, mutated: `${line.slice(0, open + 1)}!(${line.slice(open + 1, close)})${line.slice(close)}` });
  }
  return out;
}

/** Every mutant of a TypeScript source, in line order. */
export function mutantsOf(source: string): Mutant[] {
  const out: Mutant[] = [];
  let inComment = false;
  source.split("\n").forEach((line, i) => {
    const trimmed = line.trim();
    if (inComment) {
      inComment = !trimmed.includes("*/");
      return;
    }
    if (trimmed.startsWith("/*")) {
      inComment = !trimmed.includes("*/");
      return;
    }
    if (trimmed === "" || trimmed.startsWith("//") || trimmed.startsWith("*") || DECLARATION.test(trimmed)) return;
    for (const m of lineMutants(line, codeOf(line))) out.push({ line: i + 1, ...m });
  });
  return out;
}

/** The source with one mutant applied. */
export function applyMutant(source: string, m: Mutant): string {
  const lines = source.split("\n");
  if (lines[m.line - 1] !== m.original) throw new Error(`line ${m.line} is not the mutant's original`);
  lines[m.line - 1] = m.mutated;
  return lines.join("\n");
}

/** At most `max` mutants, spread evenly over the list (so a long file is sampled end to end, the same way every run). */
export function spread<T>(items: readonly T[], max: number): T[] {
  if (items.length <= max) return [...items];
  return Array.from({ length: max }, (_, k) => items[Math.floor((k * items.length) / max)]!);
}
