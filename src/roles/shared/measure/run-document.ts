// A saved run as one document: a bench result file (--output-json / --save-result, vLLM's or
// ours), or aiperf's export (its artifact directory, its summary JSON or its records JSONL, each
// with the other file beside it when there) read as a bench result. Read by --compare and calibrate.
import { dirname, join } from "node:path";
import { KvcrError } from "../../../lib/errors.ts";
import { AIPERF_RECORDS, AIPERF_SUMMARY, isAiperfSummary, resultFromAiperf } from "./aiperf-read.ts";

/** The document at `path`; `flag` names the option it came from in errors. */
export function readRunDocument(path: string, readFile: (path: string) => string, flag: string): unknown {
  const unreadable = (err: unknown) => new KvcrError("RUN_UNREADABLE", `${flag}: cannot read ${path} as a bench result or aiperf export (${(err as Error).message.split("\n")[0]})`);
  const beside = (name: string): { text: string; path: string } | undefined => {
    const at = join(dirname(path), name);
    try {
      return { text: readFile(at), path: at };
    } catch {
      return undefined;
    }
  };
  let text: string;
  try {
    text = readFile(path);
  } catch (err) {
    if ((err as { code?: string }).code !== "EISDIR") throw unreadable(err);
    // An aiperf artifact directory: its summary and its records.
    const summaryPath = join(path, AIPERF_SUMMARY);
    const recordsPath = join(path, AIPERF_RECORDS);
    let summary: { doc: unknown; path: string } | undefined;
    let records: { text: string; path: string } | undefined;
    try {
      summary = { doc: JSON.parse(readFile(summaryPath)), path: summaryPath };
    } catch (e) {
      if (e instanceof SyntaxError) throw new KvcrError("RUN_BAD_AIPERF", `${flag}: ${summaryPath}: not JSON (${e.message})`);
    }
    try {
      records = { text: readFile(recordsPath), path: recordsPath };
    } catch {
      // a summary alone gives the table, not a verdict
    }
    if (summary === undefined && records === undefined) throw new KvcrError("RUN_UNREADABLE", `${flag}: ${path} is a directory without aiperf's ${AIPERF_SUMMARY} or ${AIPERF_RECORDS}`);
    return resultFromAiperf(summary, records, flag);
  }
  if (path.endsWith(".jsonl")) {
    const summary = beside(AIPERF_SUMMARY);
    let doc: unknown;
    try {
      doc = summary && JSON.parse(summary.text);
    } catch {
      doc = undefined;
    }
    return resultFromAiperf(summary && doc !== undefined ? { doc, path: summary.path } : undefined, { text, path }, flag);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw unreadable(err);
  }
  if (isAiperfSummary(doc)) return resultFromAiperf({ doc, path }, beside(AIPERF_RECORDS), flag);
  return doc;
}

