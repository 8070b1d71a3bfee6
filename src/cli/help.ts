// --help text for any command: options under a heading per topic (their `group`, in the order
// the topics first appear; options without one under OPTIONS), fits the terminal width (long
// flags put their description on the next line, descriptions wrap, one flag column for every
// topic), and carries ANSI colour only when the stream is a terminal and NO_COLOR is unset
// (https://no-color.org).

export interface CommandMeta {
  name: string;
  description: string;
  version?: string;
  /** Left out of the root command's list. */
  hidden?: boolean;
}

/**
 * --help rows: flag (without `--`) → its text; no `valueHint` for a boolean, `negativeDescription`
 * adds `--no-FLAG`, `group` is the heading it is listed under (the option's topic).
 */
export type HelpRows = Record<string, { description: string; valueHint?: string; negativeDescription?: string; group?: string }>;

/** What --help renders: the root lists its commands (loaded on use), a command its flags. */
export interface HelpSubject {
  meta: CommandMeta;
  flags?: HelpRows;
  commands?: Readonly<Record<string, () => Promise<{ meta: CommandMeta }>>>;
}

export interface HelpStyle {
  /** Columns to fit into. */
  width: number;
  color: boolean;
}

/**
 * The style for a stream: width from COLUMNS (what the user asked for), else the terminal's own,
 * else 80; colour only on a terminal, never with NO_COLOR (any non-empty value) or TERM=dumb.
 */
export function helpStyleFor(stream: { isTTY?: boolean; columns?: number }, env: Readonly<Record<string, string | undefined>>): HelpStyle {
  const fromEnv = Number(env.COLUMNS);
  const width = Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : stream.isTTY && stream.columns ? stream.columns : 80;
  const color = stream.isTTY === true && !env.NO_COLOR && env.TERM !== "dumb";
  return { width: Math.max(40, width), color };
}

const ANSI = { bold: [1, 22], underline: [4, 24], cyan: [36, 39], gray: [90, 39] } as const;

/** Words of `text` in lines of at most `width` columns (a longer word gets a line of its own). */
export function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line || lines.length === 0) lines.push(line);
  return lines;
}

export async function renderHelp(cmd: HelpSubject, parent: HelpSubject | undefined, style: HelpStyle): Promise<string> {
  const paint = (what: keyof typeof ANSI, text: string) => (style.color ? `\x1b[${ANSI[what][0]}m${text}\x1b[${ANSI[what][1]}m` : text);
  const { meta } = cmd;
  const name = [parent?.meta.name, meta.name].filter(Boolean).join(" ");
  const version = meta.version ?? parent?.meta.version;
  const args = Object.entries(cmd.flags ?? {});

  // Topic → its rows, in the order the topics first appear.
  const groups = new Map<string | undefined, [left: string, right: string][]>();
  for (const [flag, def] of args) {
    const rows = groups.get(def.group) ?? [];
    groups.set(def.group, rows);
    rows.push([`--${flag}${def.valueHint ? `=<${def.valueHint}>` : ""}`, def.description]);
    if (def.negativeDescription) rows.push([`--no-${flag}`, def.negativeDescription]);
  }
  const commandRows: [string, string][] = [];
  for (const [subName, load] of Object.entries(cmd.commands ?? {})) {
    const subMeta = (await load()).meta;
    if (!subMeta.hidden) commandRows.push([subName, subMeta.description]);
  }

  const out: string[] = [];
  const para = (text: string, indent = "") => out.push(...wrap(text, style.width - indent.length).map((l) => indent + l));
  para(`${meta.description} (${name}${version ? ` v${version}` : ""})`);
  out.push("", `${paint("bold", "USAGE")} ${name}${args.length ? " [OPTIONS]" : ""}${commandRows.length ? ` ${commandRows.map(([n]) => n).join("|")}` : ""}`, "");
  const col = flagColumn([...groups.values()].flat(), style);
  for (const [group, rows] of groups) {
    out.push(paint("bold", group?.toUpperCase() ?? "OPTIONS"), "", ...table(rows, style, (t) => paint("cyan", t), col), "");
  }
  if (commandRows.length) {
    out.push(paint("bold", "COMMANDS"), "", ...table(commandRows, style, (t) => paint("cyan", t)), "");
    para(`Use ${name} <command> --help for the options of a command.`);
  }
  return out.join("\n").replace(/\n+$/, "");
}

/** The left column's width: the widest left cell, at most ~40 % of the width. */
function flagColumn(rows: [string, string][], style: HelpStyle): number {
  return Math.min(Math.max(...rows.map(([l]) => l.length)), Math.floor(style.width * 0.4));
}

/**
 * Two columns, the left one `col` wide (all option topics share one, so they line up): a left
 * cell wider than that puts its description on the next line; on a narrow terminal every
 * description goes under its flag.
 */
function table(rows: [string, string][], style: HelpStyle, paintLeft: (t: string) => string, col = flagColumn(rows, style)): string[] {
  const indent = "  ";
  const rightWidth = style.width - indent.length - col - 2;
  const stacked = rightWidth < 30;
  const lines: string[] = [];
  for (const [left, right] of rows) {
    if (stacked || left.length > col) {
      lines.push(indent + paintLeft(left));
      const sub = stacked ? indent + "    " : indent + " ".repeat(col + 2);
      if (right) lines.push(...wrap(right, style.width - sub.length).map((l) => sub + l));
      continue;
    }
    const [first = "", ...more] = wrap(right, rightWidth);
    lines.push(indent + paintLeft(left.padEnd(col)) + "  " + first);
    for (const l of more) lines.push(indent + " ".repeat(col + 2) + l);
  }
  return lines.map((l) => l.trimEnd());
}
