// Discovery and listening options of SPEC §7, shared by every process role.
import { namespaceProblem } from "../protocol/namespace.ts";
import { defineOptions } from "./options.ts";

export const discoveryOptions = defineOptions({
  namespace: { kind: "string", nonEmpty: true, default: "dynamo", env: "DYN_NAMESPACE", description: "Discovery namespace scoping every record" },
  // Only `file` exists today; an etcd backend would slot in behind src/discovery's store interface.
  discoveryBackend: { kind: "enum", choices: ["file"], default: "file", description: "Discovery store (a directory shared by processes on one host)" },
  discoveryDir: {
    kind: "string",
    nonEmpty: true,
    description: "Directory of the file discovery backend (default /dev/shm/kvcr-mock-discovery-<uid>, else under the temp dir)",
  },
  host: { kind: "string", nonEmpty: true, default: "127.0.0.1", description: "Address every listening socket binds to" },
});

/** The namespace rule checked at the edge, so a bad `--namespace` / DYN_NAMESPACE starts nothing. */
export function discoveryProblems(c: { namespace: string }): string[] {
  const problem = namespaceProblem(c.namespace);
  return problem ? [`--namespace (or KVCR_NAMESPACE, DYN_NAMESPACE): got ${JSON.stringify(c.namespace)}, ${problem}`] : [];
}
