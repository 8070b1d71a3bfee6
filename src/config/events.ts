// `kvcr-mock events` options: the raw KV-event stream to tap, an optional replay
// ROUTER to read history from first, and the cross-field rules.
import { ConfigError } from "../lib/errors.ts";
import { parseEndpoint } from "../protocol/zmtp/endpoint.ts";
import { defineOptions, group, type ConfigOf } from "./options.ts";

export const eventsOptions = defineOptions({
  ...group("Live stream", {
    endpoint: { kind: "string", description: "Raw KV-event PUB to subscribe to, tcp://HOST:PORT (required)" },
    topic: { kind: "string", default: "", description: "Topic prefix to subscribe to (vLLM's default topic is empty)" },
  }),
  ...group("History replay", {
    replay: { kind: "string", description: "Replay ROUTER, tcp://HOST:PORT: print history from --from-seq first, then continue live" },
    // Text, not "int": seqs are u64 and a JS number rounds above 2^53 (parsed with BigInt below).
    fromSeq: { kind: "string", description: "First seq to request from --replay, a decimal u64 (default 0: everything the worker still holds)" },
    replayTimeoutMs: {
      kind: "int",
      min: 1,
      // setTimeout's limit (2^31-1 ms, ~24.8 days): a longer delay fires after 1 ms instead.
      max: 2_147_483_647,
      default: 10_000,
      description: "Give up on a silent replay socket after this long and continue live (an error line says so)",
    },
  }),
});

export type EventsConfig = ConfigOf<typeof eventsOptions>;

export function eventsProblems(c: EventsConfig): string[] {
  const problems: string[] = [];
  if (c.endpoint === undefined) problems.push("--endpoint: required, the worker's raw KV-event PUB, e.g. tcp://127.0.0.1:5557");
  else problems.push(...endpointProblem("--endpoint", c.endpoint));
  if (c.replay !== undefined) problems.push(...endpointProblem("--replay", c.replay));
  if (c.fromSeq !== undefined) {
    if (parseU64(c.fromSeq) === undefined) problems.push(`--from-seq: got ${JSON.stringify(c.fromSeq)}, expected a decimal integer from 0 to ${MAX_U64}`);
    else if (c.replay === undefined) problems.push(`--from-seq: got ${c.fromSeq}, but it only applies with --replay tcp://HOST:PORT`);
  }
  return problems;
}

/** The replay start seq of a validated config: undefined without --replay, 0 when not given. */
export function replayStartSeq(c: Pick<EventsConfig, "replay" | "fromSeq">): bigint | undefined {
  if (c.replay === undefined) return undefined;
  const seq = parseU64(c.fromSeq ?? "0");
  if (seq === undefined) throw new ConfigError([`--from-seq: got ${JSON.stringify(c.fromSeq)}, expected a decimal integer from 0 to ${MAX_U64}`]);
  return seq;
}

const MAX_U64 = 2n ** 64n - 1n;

function parseU64(text: string): bigint | undefined {
  if (!/^\d{1,20}$/.test(text)) return undefined;
  const n = BigInt(text);
  return n <= MAX_U64 ? n : undefined;
}

function endpointProblem(flag: string, value: string): string[] {
  try {
    parseEndpoint(value, "connect");
    return [];
  } catch (err) {
    return [`${flag}: got ${JSON.stringify(value)}, ${(err as Error).message.replace(/^invalid ZeroMQ endpoint "[^"]*": /, "")}`];
  }
}
