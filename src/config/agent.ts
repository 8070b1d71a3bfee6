// `kvcr-mock agent` options: HTTP and router-event ports, slot capacity and
// retention, static sources, the raw payload limit, plus the discovery options every role takes.
import { discoveryOptions, discoveryProblems } from "./discovery.ts";
import { defineOptions, group, type ConfigOf } from "./options.ts";

export const agentOptions = defineOptions({
  ...group("HTTP and ports", {
    port: { kind: "int", min: 0, max: 65535, default: 9091, description: "HTTP port for /live, /health, /metrics, /v1/slots, /v1/snapshot, /v1/sources; 0 = pick" },
    eventsPort: { kind: "int", min: 0, max: 65535, default: 0, description: "Router-event stream PUB port (normalized events, cursor from 1); 0 = pick" },
  }),
  ...group("Slots", {
    maxSlots: { kind: "int", min: 1, max: 1_000_000, default: 8, description: "Slots (one per CacheOwner) this agent serves; owners beyond are rejected (counted)" },
    slotRetention: { kind: "number", min: 0, default: 60, description: "Seconds a slot whose intent vanished is kept (detached) before it is freed" },
  }),
  ...group("Sources", {
    staticSources: { kind: "string", nonEmpty: true, description: "JSON or YAML list of intent-shaped sources (e.g. real vLLM workers) to attach at start" },
    replayTimeoutMs: {
      kind: "int",
      min: 1,
      max: 2_147_483_647,
      default: 5_000,
      description: "A replay endpoint silent this long during a repair is given up on (the loss is counted); also a state dump's deadline",
    },
    maxEventPayloadBytes: {
      kind: "int",
      min: 1024,
      max: 1 << 30,
      default: 16 * 1024 * 1024,
      description: "Largest raw KV-event payload taken on any path (live, replay, state dump); a bigger one is dropped (counted) and its slot rebuilds from a state dump",
    },
  }),
  ...group("Discovery", {
    agentId: {
      kind: "string",
      nonEmpty: true,
      description: "Id of this agent's host record (default: stable per host name, namespace and --port, so a restarted agent takes over its records; random with --port 0)",
    },
  }),
  ...discoveryOptions,
});

export type AgentConfig = ConfigOf<typeof agentOptions>;

export function agentProblems(c: AgentConfig): string[] {
  return discoveryProblems(c);
}
