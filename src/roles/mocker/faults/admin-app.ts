// The fault API of a mocker started with --admin (docs/http-api.md, "Faults"): POST /admin/faults
// adds one (400 naming the field, 201 with the fault and its id), GET lists the pending and active
// ones, DELETE /admin/faults/{id} ends one and DELETE /admin/faults every one.
import { readCapped } from "../../../lib/read-capped.ts";
import { checkFault, type FaultKind } from "../../../protocol/faults.ts";
import { openAiError } from "../../../protocol/openai.ts";
import type { FaultTable } from "./fault-table.ts";

export const ADMIN_PREFIX = "/admin/";
const FAULTS_PATH = "/admin/faults";
/** Fault bodies are small; a schedule posts them one at a time. */
const MAX_BODY_BYTES = 64 * 1024;

/** `unsupported(kind)`: why this process cannot apply a kind (e.g. a discovery store without lease control). */
export function createAdminFetch(table: FaultTable, unsupported: (kind: FaultKind) => string | undefined = () => undefined): (req: Request, pathname: string) => Promise<Response> {
  return async (req, pathname) => {
    if (pathname === FAULTS_PATH) {
      if (req.method === "GET") return Response.json({ faults: table.list() });
      if (req.method === "DELETE") return Response.json({ deleted: table.removeAll() });
      if (req.method === "POST") return add(req, table, unsupported);
      return openAiError(405, `use GET, POST or DELETE for ${FAULTS_PATH}`);
    }
    if (pathname.startsWith(`${FAULTS_PATH}/`)) {
      const id = decodeURIComponent(pathname.slice(FAULTS_PATH.length + 1));
      if (req.method !== "DELETE") return openAiError(405, `use DELETE for ${FAULTS_PATH}/{id}`);
      return table.remove(id) ? Response.json({ deleted: 1, id }) : openAiError(404, `no active or pending fault ${JSON.stringify(id)}; GET ${FAULTS_PATH} lists them`);
    }
    return openAiError(404, `no route ${pathname}; admin routes: GET, POST, DELETE ${FAULTS_PATH}, DELETE ${FAULTS_PATH}/{id}`);
  };
}

async function add(req: Request, table: FaultTable, unsupported: (kind: FaultKind) => string | undefined): Promise<Response> {
  // Capped as it is read: a chunked body declares no length.
  const text = req.body ? await readCapped(req.body.getReader(), MAX_BODY_BYTES) : "";
  if (text === undefined) return openAiError(413, `fault body over ${MAX_BODY_BYTES} bytes`);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    return openAiError(400, `body is not valid JSON: ${(err as Error).message}`);
  }
  const checked = checkFault(body);
  if (!checked.ok) return openAiError(400, checked.problem, { param: checked.problem.split(":")[0] });
  const why = unsupported(checked.value.kind);
  if (why !== undefined) return openAiError(501, `kind: ${checked.value.kind} is not available here: ${why}`, { param: "kind" });
  const added = table.add(checked.value);
  if (!added.ok) return openAiError(400, added.problem, { param: added.problem.split(":")[0] });
  return Response.json(added.fault, { status: 201 });
}
