// Discovery and listening options, shared by every process role.
import { parseEtcdEndpoints } from "../protocol/etcd-endpoints.ts";
import { namespaceProblem } from "../protocol/namespace.ts";
import { group } from "./options.ts";

export const discoveryOptions = group("Discovery", {
  namespace: { kind: "string", nonEmpty: true, default: "dynamo", env: "DYN_NAMESPACE", description: "Discovery namespace scoping every record" },
  discoveryBackend: {
    kind: "enum",
    choices: ["file", "etcd"],
    default: "file",
    description: "Discovery store: file (a directory shared by processes on one host) or etcd (stacks spanning hosts)",
  },
  etcdEndpoints: { kind: "string", env: "ETCD_ENDPOINTS", description: "etcd client URLs for --discovery-backend etcd, comma-separated, tried in turn (http://HOST:2379[,…])" },
  discoveryLeaseTtl: { kind: "number", min: 1, max: 3600, default: 10, description: "Seconds a discovery record outlives its owner's last renewal (etcd counts whole seconds)" },
  etcdMemberTimeout: {
    kind: "number",
    min: 0.1,
    max: 60,
    default: 3,
    description: "Seconds an etcd member may leave its status probe (sent every second) unanswered before it counts as hung: the process moves to another --etcd-endpoints member, lists again, and its /health says degraded",
  },
  discoveryDir: {
    kind: "string",
    nonEmpty: true,
    description: "Directory of the file discovery backend (default /dev/shm/kvcr-mock-discovery-<uid>, else under the temp dir)",
  },
  host: { kind: "string", nonEmpty: true, default: "127.0.0.1", description: "Address every listening socket binds to" },
});

/** Namespace and backend rules checked at the edge, so bad discovery settings start nothing. */
export function discoveryProblems(c: { namespace?: string; discoveryBackend?: string; etcdEndpoints?: string; discoveryDir?: string }): string[] {
  const problems: string[] = [];
  const problem = c.namespace === undefined ? undefined : namespaceProblem(c.namespace);
  if (problem) problems.push(`--namespace (or KVCR_NAMESPACE, DYN_NAMESPACE): got ${JSON.stringify(c.namespace)}, ${problem}`);
  if (c.discoveryBackend === "etcd") {
    const parsed = parseEtcdEndpoints(c.etcdEndpoints ?? "");
    if (!parsed.ok) problems.push(`--etcd-endpoints (or KVCR_ETCD_ENDPOINTS, ETCD_ENDPOINTS): ${parsed.problem}`);
  }
  // ETCD_ENDPOINTS alone does not switch the backend (it may be set for other tools); it is ignored with `file`.
  return problems;
}
