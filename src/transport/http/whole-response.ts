// Answers whose body is bytes the app already holds: the server sends those bytes with the head
// in one write, at once, instead of reading them back out of the Response (a promise and a copy
// per answer). Anyone else reading such a Response sees an ordinary one.

const WHOLE = new WeakMap<Response, Uint8Array>();
const JSON_TYPE = "application/json;charset=utf-8";

/** A Response of `body`, which the server may send without reading it back. */
export function wholeResponse(body: Uint8Array, init?: ResponseInit): Response {
  const res = new Response(body, init);
  WHOLE.set(res, body);
  return res;
}

/** As Response.json (same body, status and content type), sent without reading it back. */
export function wholeJson(value: unknown, init: { status?: number; headers?: Record<string, string> } = {}): Response {
  return wholeResponse(Buffer.from(JSON.stringify(value)), { status: init.status, headers: { "content-type": JSON_TYPE, ...init.headers } });
}

/** The bytes of a whole Response not read yet; undefined for any other Response. */
export function wholeBodyOf(res: Response): Uint8Array | undefined {
  const body = WHOLE.get(res);
  return body === undefined || res.bodyUsed ? undefined : body;
}
