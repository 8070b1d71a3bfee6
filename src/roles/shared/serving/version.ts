// `GET /version` of every role: `{"version": VERSION}`, the shape vLLM's server answers. The
// version string is defined once, by the build, in lib/version.ts.
import { VERSION } from "../../../lib/version.ts";
import { openAiError } from "../../../protocol/openai.ts";

export const VERSION_PATH = "/version";

/** 200 `{"version"}` for GET; 405 in OpenAI's error shape otherwise, as every role's wrong method. */
export function versionResponse(method: string): Response {
  return method === "GET" ? Response.json({ version: VERSION }) : openAiError(405, `use GET for ${VERSION_PATH}`);
}
