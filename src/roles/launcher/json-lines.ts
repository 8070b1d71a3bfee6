// `up --log-format json`: every line up writes is one JSON object with a `role`. A child's line
// (children run with --log-format json too) keeps its own fields and gains `role`, the child's
// name (`mocker-0`), where pretty output puts the `mocker-0 | ` prefix; a line that is not a JSON
// object (a `--*-cmd` child's own output, a crash trace) is wrapped as an info line. up's ready
// summary becomes one line with the processes as fields.

/** The child's line with `role` set to its name; `{ts, role, level: "info", msg}` around a line that is not a JSON object. */
export function childJsonLine(role: string, line: string, now: Date = new Date()): string {
  if (line.startsWith("{")) {
    try {
      const fields = JSON.parse(line) as unknown;
      // The child's own role (its logger's tag, e.g. "mocker") gives way to the name up knows it by; `tag` keeps the former.
      if (typeof fields === "object" && fields !== null && !Array.isArray(fields)) return JSON.stringify({ ...fields, role });
    } catch {
      // not JSON after all: wrapped below
    }
  }
  return JSON.stringify({ ts: now.toISOString(), role, level: "info", msg: line });
}

export interface ReadyProcess {
  name: string;
  role: string;
  url: string;
  pid: number;
  external?: boolean;
  rawEndpoints?: string[][];
  workerApiUrls?: string[];
}

/** The ready summary as one JSON line of role "up" (the pretty form is a table for people). */
export function readyJsonLine(
  r: { elapsedMs: number; mode: string; model: string; namespace: string; processes: readonly ReadyProcess[]; discovery: string; stateFile?: string; frontendUrl?: string; frontendUrls?: readonly string[] },
  now: Date = new Date(),
): string {
  return JSON.stringify({
    ts: now.toISOString(),
    level: "info",
    role: "up",
    msg: `kvcr-mock stack ready in ${(r.elapsedMs / 1000).toFixed(1)} s`,
    mode: r.mode,
    model: r.model,
    namespace: r.namespace,
    processes: r.processes.map((p) => ({ name: p.name, role: p.role, url: p.url, pid: p.pid, ...(p.external ? { external: true } : {}), ...(p.rawEndpoints ? { raw_endpoints: p.rawEndpoints } : {}), ...(p.workerApiUrls ? { worker_api_urls: p.workerApiUrls } : {}) })),
    discovery: r.discovery,
    ...(r.stateFile !== undefined ? { state_file: r.stateFile } : {}),
    ...(r.frontendUrl !== undefined ? { frontend_url: r.frontendUrl } : {}),
    // Only with --frontends above 1 (frontend_url is the first of them).
    ...(r.frontendUrls !== undefined && r.frontendUrls.length > 1 ? { frontend_urls: r.frontendUrls } : {}),
  });
}
