// External role commands (`--agent-cmd`, `--mocker-cmd`, `--frontend-cmd`): `{name}` placeholders
// filled with the ports, URLs and discovery settings `up` chose, run by /bin/sh with `exec` so
// the command itself is the child `up` supervises (signals and the stdin lifeline reach it). A
// command need not watch the lifeline itself: a watcher in its process group does, and sends the
// group SIGTERM once up is gone (a router from PyPI does not read stdin, and would outlive a killed up).
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
    model_path: "with --runtime dynamo: the model directory the workers' cards name (Dynamo's mocker --model-path)",
    engine_args: "the stack's engine settings as Dynamo's mocker takes them (--block-size=64 --num-gpu-blocks-override=… --speedup-ratio=…, every shared flag, defaults too), several words; a setting it has no flag for is a config error",
  },
  frontend: {
    port: "the frontend's HTTP port",
    router_mode: "router mode",
    workers: "workers in the whole stack",
    worker_api_urls: "every worker's API base URL (vLLM's OpenAI server per worker; turns on --worker-api), as separate words; {worker_api_urls:--flag} repeats --flag before each, {worker_api_urls:--flag=} joins them",
    worker_api_urls_csv: "the same URLs, comma-separated, as one word",
    prefill_api_urls: "with --prefill-workers / --decode-workers: the prefill workers' API URLs, as {worker_api_urls} (also {prefill_api_urls:--flag})",
    decode_api_urls: "the decode workers' API URLs, likewise",
    prefill_bootstrap: "each prefill worker's API URL and its process's KV transfer port (where decode legs meet their room), two words per worker; {prefill_bootstrap:--prefill} puts the flag before each pair (sglang-router's --prefill URL PORT)",
    worker_kv_event_sources: "each worker's API URL = its ranks' raw KV-event endpoints (vLLM's ZeroMQ stream), one word per worker, URL=tcp://…[,tcp://…] (vllm-router's --kv-event-source; {worker_kv_event_sources:--kv-event-source})",
    metrics_port: "a free port up picked for the frontend's own metrics listener (a router's --prometheus-port)",
  },
} as const;

/** Placeholders that take a list, one shell word per item (and the `{name:--flag}` form). */
const LIST_PLACEHOLDERS: ReadonlySet<string> = new Set(["worker_api_urls", "prefill_api_urls", "decode_api_urls", "prefill_bootstrap", "worker_kv_event_sources"]);
/** Placeholders that name the workers' API URLs: up must know those ports before the frontend starts. */
export const WORKER_URL_PLACEHOLDERS: readonly string[] = ["worker_api_urls", "worker_api_urls_csv", "prefill_api_urls", "decode_api_urls", "prefill_bootstrap", "worker_kv_event_sources"];
/** The ones that split the workers by their disaggregated side. */
export const PD_URL_PLACEHOLDERS: readonly string[] = ["prefill_api_urls", "decode_api_urls", "prefill_bootstrap"];

const PLACEHOLDER = /\{\{|\}\}|\{([a-z_]+)(?::([^{}]*))?\}/g;

export type TemplateRole = keyof typeof ROLE_PLACEHOLDERS;

/** Single-quotes a value for /bin/sh unless it is plainly safe. */
export function shellQuote(value: string): string {
  return /^[A-Za-z0-9_./:,@%+=-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}

/** The placeholder names `template` uses. */
export function placeholdersIn(template: string): Set<string> {
  return new Set([...template.matchAll(PLACEHOLDER)].flatMap((m) => (m[1] === undefined ? [] : [m[1]])));
}

/** What is wrong with `template`'s placeholders for `role` (a config error before anything starts): unknown names, a flag on a single value. */
export function placeholderProblems(template: string, role: TemplateRole, flag: string): string[] {
  const known = new Set([...Object.keys(COMMON_PLACEHOLDERS), ...Object.keys(ROLE_PLACEHOLDERS[role])]);
  const problems: string[] = [];
  const unknown = [...placeholdersIn(template)].filter((n) => !known.has(n));
  if (unknown.length > 0) problems.push(`${flag}: unknown placeholder(s) ${unknown.map((n) => `{${n}}`).join(", ")}; known: ${[...known].map((n) => `{${n}}`).join(" ")}`);
  for (const [, name, repeat] of template.matchAll(PLACEHOLDER)) {
    if (repeat === undefined || name === undefined || !known.has(name)) continue;
    if (!LIST_PLACEHOLDERS.has(name)) problems.push(`${flag}: {${name}:${repeat}}: only ${[...LIST_PLACEHOLDERS].map((n) => `{${n}}`).join(", ")} take a flag to repeat; {${name}} is one value`);
    else if (!/^\S+$/.test(repeat)) problems.push(`${flag}: {${name}:${repeat}}: the flag to repeat must be one word, e.g. {${name}:--worker-url}`);
  }
  return problems;
}

/** The argv that runs the filled-in template (`{{` and `}}` stand for literal braces); a list value is one word per item. */
export function renderCommand(template: string, values: Readonly<Record<string, string | readonly (string | readonly string[])[]>>, flag: string, role: TemplateRole): string[] {
  const problems = placeholderProblems(template, role, flag);
  if (problems.length > 0) throw new ConfigError(problems);
  const filled = template.replace(PLACEHOLDER, (m, name: string | undefined, repeat: string | undefined) => {
    if (m === "{{") return "{";
    if (m === "}}") return "}";
    const value = values[name!] ?? "";
    if (typeof value !== "string") {
      // An item of several words (a URL and its port) is that many words; --flag= joins the first.
      const words = (v: string | readonly string[]) => (typeof v === "string" ? [v] : v);
      if (repeat === undefined) return value.map((v) => words(v).map(shellQuote).join(" ")).join(" ");
      return value
        .map((v) => {
          const [first = "", ...rest] = words(v);
          return [...(repeat.endsWith("=") ? [shellQuote(repeat + first)] : [shellQuote(repeat), shellQuote(first)]), ...rest.map(shellQuote)].join(" ");
        })
        .join(" ");
    }
    // kvcr_mock is already a quoted argv; every other value is one shell word.
    return name === "kvcr_mock" ? value : shellQuote(value);
  });
  return ["/bin/sh", "-c", `${LIFELINE_WATCH}exec ${filled}`];
}

/**
 * Reads a copy of stdin (the lifeline, never written to) in the background and, at its end, sends
 * SIGTERM to the process group the command leads (`$$` is the shell, which `exec` turns into the
 * command). A background list's stdin is /dev/null in a non-interactive shell, hence fd 3.
 */
export const LIFELINE_WATCH = "exec 3<&0; (cat <&3 >/dev/null 2>&1; kill -TERM -$$ 2>/dev/null) >/dev/null 2>&1 & exec 3<&-; ";
