// `kvcr-mock events` options (SPEC §1, §4.2): the raw KV-event stream to tap, an optional replay
// ROUTER to read history from first, and the cross-field rules.
import { parseEndpoint } from "../protocol/zmtp/endpoint.ts";
import { defineOptions, type ConfigOf } from "./options.ts";

export const eventsOptions = defineOptions({
  endpoint: { kind: "string", description: "Raw KV-event PUB to subscribe to, tcp://HOST:PORT (required)" },
  topic: { kind: "string", default: "", description: "Topic prefix to subscribe to (vLLM's default topic is empty)" },
  replay: { kind: "string", description: "Replay ROUTER, tcp://HOST:PORT: print history from --from-seq first, then continue live" },
  fromSeq: { kind: "int", min: 0, description: "First seq to request from --replay (default 0: everything the worker still holds)" },
  replayTimeoutMs: {
    kind: "int",
    min: 1,
    default: 10_000,
    description: "Give up on a silent replay socket after this long and continue live (an error line says so)",
  },
});

export type EventsConfig = ConfigOf<typeof eventsOptions>;

export function eventsProblems(c: EventsConfig): string[] {
  const problems: string[] = [];
  if (c.endpoint === undefined) problems.push("--endpoint: required, the worker's raw KV-event PUB, e.g. tcp://127.0.0.1:5557");
  else problems.push(...endpointProblem("--endpoint", c.endpoint));
  if (c.replay !== undefined) problems.push(...endpointProblem("--replay", c.replay));
  if (c.fromSeq !== undefined && c.replay === undefined) problems.push(`--from-seq: got ${c.fromSeq}, but it only applies with --replay tcp://HOST:PORT`);
  return problems;
}

function endpointProblem(flag: string, value: string): string[] {
  try {
    parseEndpoint(value, "connect");
    return [];
  } catch (err) {
    return [`${flag}: got ${JSON.stringify(value)}, ${(err as Error).message.replace(/^invalid ZeroMQ endpoint "[^"]*": /, "")}`];
  }
}
