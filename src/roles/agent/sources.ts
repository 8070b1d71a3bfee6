// Where the agent's sources come from: discovery intents (validated as the mocker writes
// them, AttachmentIntentSchema), and static (`--static-sources FILE`) or runtime (`POST
// /v1/sources`) sources, validated with SourceIntentSchema: the same fields, but any raw topic
// ("" included, vLLM's default) and no required kv_state_endpoint, since a real vLLM worker
// configured by hand has no agent-side endpoint to name. All three become one SourceIntent.
import { readFileSync } from "node:fs";
import * as v from "valibot";
import { parse as parseYaml } from "yaml";
import { ConfigError } from "../../lib/errors.ts";
import { AttachmentIntentSchema, checkRecord, INGRESS_PROTOCOL, type RecordCheck } from "../../protocol/records.ts";

const endpoint = v.pipe(v.string(), v.regex(/^tcp:\/\/(\[[0-9a-fA-F:.]+\]|[^:/\s]+):\d{1,5}$/, "expected tcp://HOST:PORT"));
const count = v.pipe(v.number(), v.integer(), v.minValue(0));

export const SourceIntentSchema = v.object({
  ...AttachmentIntentSchema.entries,
  raw_topic: v.string(),
  kv_state_endpoint: v.optional(v.pipe(v.string(), v.nonEmpty())),
  replay_endpoint: v.optional(endpoint),
  router_hint_source: v.optional(endpoint),
  incarnation: v.optional(count, 0),
  ingress_protocol: v.optional(v.literal(INGRESS_PROTOCOL), INGRESS_PROTOCOL),
});
/** What a slot attaches to, whatever its origin. */
export type SourceIntent = v.InferOutput<typeof SourceIntentSchema>;

export function checkDiscoveryIntent(value: unknown): RecordCheck<SourceIntent> {
  return checkRecord(AttachmentIntentSchema, value);
}

export function checkSourceIntent(value: unknown): RecordCheck<SourceIntent> {
  return checkRecord(SourceIntentSchema, value);
}

/** Fields whose change means the slot must re-attach (new publisher, new incarnation). */
export function sameAttachment(a: SourceIntent, b: SourceIntent): boolean {
  return (
    a.worker_id === b.worker_id &&
    a.dp_rank === b.dp_rank &&
    a.block_size === b.block_size &&
    a.raw_endpoint === b.raw_endpoint &&
    a.raw_topic === b.raw_topic &&
    a.replay_endpoint === b.replay_endpoint &&
    a.state_dump_url === b.state_dump_url &&
    a.incarnation === b.incarnation
  );
}

export interface StaticSources {
  sources: SourceIntent[];
  /** One line per entry ignored, naming its index and the bad field. */
  warnings: string[];
}

/**
 * Parses a static source file (a JSON or YAML list of intent-shaped objects). A file that cannot be
 * read, does not parse or is not a list is a ConfigError (nothing starts); a bad entry is ignored
 * with a warning naming the field, as a bad discovery intent is.
 */
export function readStaticSources(path: string, readFile: (p: string) => string = (p) => readFileSync(p, "utf8")): StaticSources {
  let text: string;
  try {
    text = readFile(path);
  } catch (err) {
    throw new ConfigError([`--static-sources: cannot read ${path}: ${(err as Error).message}`]);
  }
  let doc: unknown;
  const json = /\.json$/i.test(path);
  try {
    doc = json ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new ConfigError([`--static-sources: ${path} is not valid ${json ? "JSON" : "YAML"}: ${(err as Error).message.split("\n")[0]}`]);
  }
  if (doc === null || doc === undefined) return { sources: [], warnings: [] };
  if (!Array.isArray(doc)) throw new ConfigError([`--static-sources: ${path} must hold a list of sources, got ${typeof doc}`]);
  const sources: SourceIntent[] = [];
  const warnings: string[] = [];
  doc.forEach((entry, i) => {
    const r = checkSourceIntent(entry);
    if (r.ok) sources.push(r.value);
    else warnings.push(`--static-sources ${path}: entry ${i} ignored: ${r.problem}`);
  });
  return { sources, warnings };
}
