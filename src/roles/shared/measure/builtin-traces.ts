// The sample traces built into the binary, so a user of the binary alone can replay and bench:
// `--trace builtin:<name>`. Imported as files, they are embedded in the compiled binary and read
// only when named (from a checkout, they are read from traces/).
import conversation from "../../../../traces/mooncake_conversation_trace.jsonl" with { type: "file" };
import synthetic from "../../../../traces/mooncake_synthetic_trace.jsonl" with { type: "file" };

export const BUILTIN_PREFIX = "builtin:";

const BUILTIN_TRACES: Record<string, string> = {
  "mooncake-conversation": conversation,
  "mooncake-synthetic": synthetic,
};

export const BUILTIN_TRACE_NAMES = Object.keys(BUILTIN_TRACES).map((n) => `${BUILTIN_PREFIX}${n}`);

/** The file behind `builtin:<name>`, or the argument itself when it names no built-in trace; throws for an unknown built-in. */
export function tracePath(arg: string): string {
  if (!arg.startsWith(BUILTIN_PREFIX)) return arg;
  const path = BUILTIN_TRACES[arg.slice(BUILTIN_PREFIX.length)];
  if (path === undefined) throw new Error(`no built-in trace ${arg}; built in: ${BUILTIN_TRACE_NAMES.join(", ")}`);
  return path;
}
