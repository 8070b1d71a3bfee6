// `mocker --runtime dynamo`: the flags that make the process join a Dynamo deployment (Dynamo's
// spellings and environment variables), and how the shared discovery flags take Dynamo's meaning
// and defaults under it: backend DYN_DISCOVERY_BACKEND or etcd (at ETCD_ENDPOINTS or
// localhost:2379), directory DYN_FILE_KV or $TMPDIR/dynamo_store_kv (a flag always wins).
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseEndpointId } from "../protocol/dynamo/discovery-records.ts";
import type { Candidate } from "./load.ts";
import { group } from "./options.ts";

export const dynamoRuntimeOptions = group("Dynamo runtime", {
  runtime: {
    kind: "enum",
    choices: ["kvcr", "dynamo"],
    default: "kvcr",
    description: "Whose deployment the workers join: kvcr (kvcr-mock's agent and frontend) or dynamo (Dynamo's frontend and router: its discovery records, TCP request plane and ZeroMQ event plane)",
  },
  endpoint: { kind: "string", nonEmpty: true, description: "With --runtime dynamo: the workers' Dynamo endpoint, dyn://NAMESPACE.COMPONENT.ENDPOINT (default dyn://{namespace}.backend.generate)" },
  modelPath: { kind: "string", nonEmpty: true, description: "With --runtime dynamo: the model directory named in the model card (tokenizer.json, config.json, tokenizer_config.json; `kvcr-mock model-files` writes one)" },
  bootstrapPorts: {
    kind: "intList",
    min: 0,
    max: 65535,
    description: "With --runtime dynamo, prefill workers: one bootstrap port per worker (0 = pick). Dynamo's frontend then sends both legs at once and the decode worker meets its prefill here; without it the legs run one after the other",
  },
  requestPlane: {
    kind: "enum",
    choices: ["tcp"],
    default: "tcp",
    env: "DYN_REQUEST_PLANE",
    refused: { nats: "the NATS request plane is not supported: use tcp (Dynamo's default)", http: "the HTTP request plane is not supported: use tcp (Dynamo's default)" },
    description: "With --runtime dynamo: Dynamo's request plane",
  },
  eventPlane: {
    kind: "enum",
    choices: ["zmq"],
    default: "zmq",
    env: "DYN_EVENT_PLANE",
    refused: { nats: "the NATS event plane is not supported: use zmq" },
    description: "With --runtime dynamo: Dynamo's event plane",
  },
});

interface DynamoKeys {
  runtime: string;
  disaggregationMode?: string;
  bootstrapPorts?: number[];
  numWorkers: number;
  kvStateAgent?: boolean;
  zmqKvEventsPorts?: number[];
  openaiPortBase?: number;
  openaiPorts?: number[];
  admin?: boolean;
  namespace: string;
  endpoint?: string;
  modelPath?: string;
  modelName: string;
  discoveryBackend: string;
}

/** Under --runtime dynamo, the values Dynamo would take for what the user did not set. */
export function dynamoOverlay(c: DynamoKeys, given: ReadonlySet<string>, env: Readonly<Record<string, string | undefined>>): Map<string, Candidate> {
  const out = new Map<string, Candidate>();
  if (c.runtime !== "dynamo") return out;
  const backend = given.has("discoveryBackend") ? c.discoveryBackend : env.DYN_DISCOVERY_BACKEND || "etcd";
  if (!given.has("discoveryBackend")) {
    out.set("discoveryBackend", env.DYN_DISCOVERY_BACKEND ? { value: env.DYN_DISCOVERY_BACKEND, label: "DYN_DISCOVERY_BACKEND" } : { value: "etcd", label: "Dynamo's default discovery backend" });
  }
  // Dynamo's etcd client defaults to localhost:2379 when ETCD_ENDPOINTS is unset.
  if (backend === "etcd" && !given.has("etcdEndpoints")) out.set("etcdEndpoints", { value: "http://localhost:2379", label: "Dynamo's default etcd endpoint" });
  if (!given.has("discoveryDir")) {
    out.set("discoveryDir", env.DYN_FILE_KV ? { value: env.DYN_FILE_KV, label: "DYN_FILE_KV" } : { value: join(env.TMPDIR || tmpdir(), "dynamo_store_kv"), label: "Dynamo's default file store" });
  }
  if (!given.has("modelName") && c.modelPath) out.set("modelName", { value: c.modelPath, label: "--model-path (Dynamo's default model name)" });
  return out;
}

export function dynamoRuntimeProblems(c: DynamoKeys): string[] {
  if (c.runtime !== "dynamo") {
    const stray = ([["endpoint", c.endpoint], ["model-path", c.modelPath], ["bootstrap-ports", c.bootstrapPorts]] as const).filter(([, v]) => v !== undefined).map(([f]) => `--${f}`);
    return stray.length ? [`${stray.join(", ")}: only with --runtime dynamo`] : [];
  }
  const problems: string[] = [];
  // What this runtime does not do yet is refused, never accepted and ignored.
  const notYet: [boolean, string][] = [
    [c.zmqKvEventsPorts !== undefined && c.kvStateAgent !== true, "--zmq-kv-events-ports without --kv-state-agent"],
    [c.openaiPortBase !== undefined || c.openaiPorts !== undefined, "--openai-port-base / --openai-ports"],
    [c.admin === true, "--admin"],
  ];
  for (const [given, flag] of notYet) if (given) problems.push(`${flag}: not supported with --runtime dynamo yet (the workers serve Dynamo's request plane, not an API of their own)`);
  if (c.bootstrapPorts !== undefined) {
    if (c.disaggregationMode !== "prefill") problems.push(`--bootstrap-ports: a prefill worker's setting (decode workers dial it), contradicts --disaggregation-mode ${c.disaggregationMode ?? "agg"}`);
    else if (c.bootstrapPorts.length !== c.numWorkers) problems.push(`--bootstrap-ports: got ${c.bootstrapPorts.length} port(s), expected exactly one per worker (${c.numWorkers})`);
  }
  if (!c.modelPath) problems.push("--model-path: required with --runtime dynamo (the model directory Dynamo's frontend loads the tokenizer from; `kvcr-mock model-files --out DIR` writes one)");
  if (c.endpoint !== undefined) {
    const ep = parseEndpointId(c.endpoint);
    if (!ep) problems.push(`--endpoint: got ${JSON.stringify(c.endpoint)}, expected dyn://NAMESPACE.COMPONENT.ENDPOINT`);
    else if (ep.namespace !== c.namespace) problems.push(`--endpoint: its namespace ${JSON.stringify(ep.namespace)} differs from --namespace (or DYN_NAMESPACE) ${JSON.stringify(c.namespace)}`);
  }
  return problems;
}
