// `python -m dynamo.mocker`'s flags (1.6.1, from its --help) that `kvcr-mock mocker` does not have
// under the same name, and what `mocker --runtime dynamo` does with each, so a Dynamo launch script
// runs with kvcr-mock in place of Dynamo's mocker: a flag with the same meaning under another name
// is translated, one that would not change what kvcr-mock does is accepted with a warning, one
// whose effect kvcr-mock cannot give is refused with the reason. Every other Dynamo mocker flag is
// kvcr-mock's own, with Dynamo's meaning (docs/dynamo.md has the whole table).

export type Handling = { kind: "alias"; to: string[] } | { kind: "ignore"; why: string } | { kind: "refuse"; why: string };

export interface DynamoOnlyFlag {
  /** Takes a value (`--flag V` or `--flag=V`); else a switch. */
  value: boolean;
  handling: Handling;
  /** Only some values are refused: the others are ignored (--engine-type vllm is kvcr-mock's engine). */
  refuseUnless?: string[];
}

const ROUTER = "a router setting Dynamo's mocker advertises in its card; kvcr-mock's cards advertise none, so the frontend's own setting applies (give it there)";
const AIS = "AISimulate's perf model and capacity estimate; kvcr-mock times steps with its own model and takes capacity from --num-gpu-blocks-override";
const OWN_TIMING = "kvcr-mock times steps with its own models (--timing-model; --timing-profile builtin:NAME holds AIConfigurator's measured step times)";
const ENGINE = "a setting of an SGLang or TensorRT-LLM mock engine; kvcr-mock's engine is vLLM's";

const ignore = (why: string, value = true): DynamoOnlyFlag => ({ value, handling: { kind: "ignore", why } });
const refuse = (why: string, value = true): DynamoOnlyFlag => ({ value, handling: { kind: "refuse", why } });

const routerValued = [
  "router-mode", "router-session-affinity-ttl-secs", "router-session-affinity-mode", "active-decode-blocks-threshold", "active-prefill-tokens-threshold",
  "active-prefill-tokens-threshold-frac", "router-kv-overlap-score-credit", "router-kv-overlap-score-credit-decay", "router-prefill-load-scale",
  "router-decode-active-request-weight", "router-host-cache-hit-weight", "router-disk-cache-hit-weight", "router-temperature", "router-tracking-hash",
  "router-tracking-key-file", "router-tracking-key-id", "router-prefill-load-model", "router-ttl-secs", "router-approximate-cache-policy", "router-queue-threshold",
  "router-policy-config", "router-conditional-disagg-config", "router-prefill-policy", "router-decode-policy", "router-event-threads", "router-queue-policy",
  "shared-cache-multiplier", "shared-cache-type", "router-predicted-ttl-secs",
];
const routerSwitches = [
  "load-aware", "router-kv-events", "kv-events", "router-replica-sync", "router-track-active-blocks", "track-active-blocks", "router-track-output-blocks",
  "track-output-blocks", "router-assume-kv-reuse", "assume-kv-reuse", "router-track-prefill-tokens", "router-conditional-disagg", "use-remote-indexer",
  "enable-session-prefix-index",
];
const aisValued = ["ais-system", "ais-backend", "ais-backend-version", "ais-tp-size", "ais-moe-tp-size", "ais-moe-ep-size", "ais-attention-dp-size", "ais-nextn", "ais-nextn-accept-rates", "ais-mtp-seed", "ais-perf-config"];

export const DYNAMO_ONLY_FLAGS: Readonly<Record<string, DynamoOnlyFlag>> = {
  ...Object.fromEntries(routerValued.map((f) => [f, ignore(ROUTER)])),
  ...Object.fromEntries(routerSwitches.flatMap((f) => [[f, ignore(ROUTER, false)], [`no-${f}`, ignore(ROUTER, false)]])),
  // Each with its older `--aic-` spelling, but for --ais-perf-config (it has none).
  ...Object.fromEntries(aisValued.flatMap((f) => [[f, ignore(AIS)], ...(f === "ais-perf-config" ? [] : [[f.replace(/^ais-/, "aic-"), ignore(AIS)]])])),
  "ais-perf-model": refuse(`it times steps with AISimulate's perf model; ${OWN_TIMING}`, false),
  "aic-perf-model": refuse(`it times steps with AISimulate's perf model; ${OWN_TIMING}`, false),
  "gpu-memory-utilization": ignore(AIS),
  "mem-fraction-static": ignore(AIS),
  "free-gpu-memory-fraction": ignore(AIS),
  "kv-cache-dtype": ignore(AIS),
  "engine-type": { value: true, handling: { kind: "refuse", why: "kvcr-mock mocks vLLM's engine only (--engine-type vllm)" }, refuseUnless: ["vllm"] },
  ...Object.fromEntries(["sglang-schedule-policy", "sglang-page-size", "sglang-max-prefill-tokens", "sglang-chunked-prefill-size", "sglang-clip-max-new-tokens", "sglang-schedule-conservativeness", "trtllm-capacity-scheduler-policy"].map((f) => [f, ignore(ENGINE)])),
  "sglang-generate": ignore(ENGINE, false),
  "is-prefill-worker": { value: false, handling: { kind: "alias", to: ["--disaggregation-mode", "prefill"] } },
  "is-decode-worker": { value: false, handling: { kind: "alias", to: ["--disaggregation-mode", "decode"] } },
  "response-plane": { value: true, handling: { kind: "refuse", why: "the QUIC response plane is not supported: the workers answer on Dynamo's TCP response plane (--response-plane tcp)" }, refuseUnless: ["tcp"] },
  reasoning: ignore("reasoning-token output is Dynamo's mocker's; kvcr-mock's tokens carry no reasoning split"),
  "response-replay-trace-path": refuse("kvcr-mock generates its own token ids; it does not replay recorded responses"),
  "startup-time": ignore("kvcr-mock's workers register as soon as they serve; no simulated start-up delay"),
};

export interface Translated {
  argv: string[];
  warnings: string[];
  problems: string[];
}

/** Whether `argv` asks for Dynamo's runtime (the only case the translation applies). */
export function asksForDynamo(argv: readonly string[]): boolean {
  return argv.some((a, i) => a === "--runtime=dynamo" || (a === "--runtime" && argv[i + 1] === "dynamo"));
}

/** Rewrites Dynamo-only flags out of a `mocker --runtime dynamo` command line (up to a `--`). */
export function translateDynamoMockerFlags(argv: readonly string[]): Translated {
  const out: string[] = [];
  const warnings: string[] = [];
  const problems: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      out.push(...argv.slice(i));
      break;
    }
    const m = /^--([a-z0-9-]+)(?:=(.*))?$/.exec(arg);
    const spec = m ? DYNAMO_ONLY_FLAGS[m[1]!] : undefined;
    if (!m || !spec) {
      out.push(arg);
      continue;
    }
    const flag = `--${m[1]}`;
    let value = m[2];
    if (spec.value && value === undefined) {
      value = argv[i + 1];
      if (value === undefined || value.startsWith("--")) {
        problems.push(`${flag}: needs a value`);
        continue;
      }
      i++;
    }
    const h = spec.handling;
    if (h.kind === "alias") out.push(...h.to);
    else if (h.kind === "ignore" || (spec.refuseUnless && value !== undefined && spec.refuseUnless.includes(value))) {
      warnings.push(`${flag}${value !== undefined ? ` ${value}` : ""}: Dynamo's mocker flag, accepted and ignored (${h.kind === "ignore" ? h.why : `${value} is what kvcr-mock does`})`);
    } else problems.push(`${flag}${value !== undefined ? ` ${value}` : ""}: Dynamo's mocker flag, refused: ${h.why}`);
  }
  return { argv: out, warnings, problems };
}
