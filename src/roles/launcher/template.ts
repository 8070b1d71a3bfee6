// External role commands (`--agent-cmd`, `--mocker-cmd`, `--frontend-cmd`): `{name}` placeholders
// filled with the ports, URLs and discovery settings `up` chose, run by /bin/sh with `exec` so
// the command itself is the child `up` supervises (signals and the stdin lifeline reach it).
import { ConfigError } from "../../lib/errors.ts";

/** Placeholders every external command may use, and what they hold. */
export const COMMON_PLACEHOLDERS = {
  kvcr_mock: "this kvcr-mock executable (argv, shell-quoted), to wrap or reuse a built-in role",
  host: "bind address (--host)",
  namespace: "discovery namespace",
  discovery_backend: "discovery backend",
  discovery_dir: "discovery directory (file backend)",
  model: "model name",
  block_size: "tokens per KV block",
  mode: "state_agent or direct",
  agent_port: "agent HTTP port (state-agent mode)",
  agent_url: "agent base URL (state-agent mode)",
  frontend_port: "frontend HTTP port",
  frontend_url: "frontend base URL",
  log_level: "log level",
  peers_python: "the Python that runs Dynamo's roles (--runtime dynamo: --peers-python, KVCR_PEERS_PYTHON or the peers environment)",
} as const;

export const ROLE_PLACEHOLDERS = {
  agent: { port: "the agent's HTTP port", max_slots: "the agent's slot cap" },
  mocker: {
    port: "this mocker process's HTTP port",
    index: "mocker process index (0-based)",
    workers: "workers in this process",
    first_worker: "global index of its first worker",
    dp: "data-parallel ranks per worker",
    zmq_kv_events_ports: "raw PUB base port per worker, comma-separated (0 = pick)",
    zmq_replay_ports: "replay base port per worker, comma-separated (empty without replay)",
    cache_slot: "first CacheOwner ordinal of this process",
    raw_host: "host the agent dials for raw events",
  },
  frontend: { port: "the frontend's HTTP port", router_mode: "router mode", workers: "workers in the whole stack" },
} as const;

export type TemplateRole = keyof typeof ROLE_PLACEHOLDERS;

/** Single-quotes a value for /bin/sh unless it is plainly safe. */
export function shellQuote(value: string): string {
  return /^[A-Za-z0-9_./:,@%+=-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}

/** Names used in `template` that `role` does not define (for a config error before anything starts). */
export function unknownPlaceholders(template: string, role: TemplateRole): string[] {
  const known = new Set([...Object.keys(COMMON_PLACEHOLDERS), ...Object.keys(ROLE_PLACEHOLDERS[role])]);
  return [...template.replace(/\{\{|\}\}/g, "").matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1]!).filter((n) => !known.has(n));
}

/** The argv that runs the filled-in template (`{{` and `}}` stand for literal braces). */
export function renderCommand(template: string, values: Readonly<Record<string, string>>, flag: string, role: TemplateRole): string[] {
  const unknown = unknownPlaceholders(template, role);
  if (unknown.length > 0) {
    throw new ConfigError([`${flag}: unknown placeholder(s) ${unknown.map((n) => `{${n}}`).join(", ")}; known: ${[...Object.keys(COMMON_PLACEHOLDERS), ...Object.keys(ROLE_PLACEHOLDERS[role])].map((n) => `{${n}}`).join(" ")}`]);
  }
  const filled = template.replace(/\{\{|\}\}|\{([a-z_]+)\}/g, (m, name: string | undefined) => {
    if (m === "{{") return "{";
    if (m === "}}") return "}";
    const value = values[name!];
    // kvcr_mock is already a quoted argv; every other value is one shell word.
    return name === "kvcr_mock" ? (value ?? "") : shellQuote(value ?? "");
  });
  return ["/bin/sh", "-c", `exec ${filled}`];
}
