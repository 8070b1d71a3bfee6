// vLLM's --save-result / --append-result: the JSON result, compact, written under
// --result-dir with --result-filename or vLLM's default name; appending adds one document per line.
import { defaultResultFilename } from "./result-json.ts";

export interface SaveResultOptions {
  dir?: string;
  filename?: string;
  append: boolean;
}

export interface SaveResultDeps {
  readFile(path: string): string;
  /** Writes the file (throws on failure, which the caller reports). */
  write(path: string, text: string): void;
}

/** Writes `doc`; returns the path written. */
export function saveResult(o: SaveResultOptions, doc: unknown, name: { label?: string; backend: string; requestRate: number | "inf"; maxConcurrency?: number; model: string }, deps: SaveResultDeps): string {
  const file = o.filename ?? defaultResultFilename({ ...name, date: new Date() });
  const path = o.dir !== undefined ? `${o.dir.replace(/\/+$/, "")}/${file}` : file;
  let before = "";
  if (o.append) {
    try {
      before = deps.readFile(path);
    } catch {
      before = ""; // nothing to append to yet
    }
  }
  const text = JSON.stringify(doc);
  deps.write(path, before === "" ? text : `${before.replace(/\n+$/, "")}\n${text}`);
  return path;
}
