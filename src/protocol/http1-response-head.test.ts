// The response head as written: status line, the app's fields in order (from a Headers or a record
// of lower-case names alike) without the framing and connection fields the server owns, Date
// unless the app gave one, then the framing and the connection's fate.
import { describe, expect, test } from "bun:test";
import { asksToClose, httpDate, responseHead } from "./http1-response-head.ts";

const DATE = "Mon, 07 Dec 2026 07:00:00 GMT";

describe("responseHead", () => {
  test("a Headers and the same fields as a record give the same head; server-owned fields are dropped", () => {
    const record = { "content-type": "application/x-ndjson", "content-length": "999", connection: "keep-alive", "transfer-encoding": "gzip", "keep-alive": "timeout=5", "x-kvcr-worker": "w-1" };
    const want = `HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\nx-kvcr-worker: w-1\r\ndate: ${DATE}\r\ncontent-length: 15\r\n\r\n`;
    expect(responseHead(200, record, DATE, { kind: "length", length: 15 }, undefined)).toBe(want);
    expect(responseHead(200, new Headers(record), DATE, { kind: "length", length: 15 }, undefined)).toBe(want);
  });

  test("an app's Date is kept; chunked, bodiless and until-close framing; Connection written when asked", () => {
    expect(responseHead(404, { date: "then" }, DATE, { kind: "chunked" }, "close")).toBe("HTTP/1.1 404 Not Found\r\ndate: then\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n");
    expect(responseHead(204, {}, DATE, { kind: "none" }, "keep-alive")).toBe(`HTTP/1.1 204 No Content\r\ndate: ${DATE}\r\nconnection: keep-alive\r\n\r\n`);
    expect(responseHead(299, {}, DATE, { kind: "until-close" }, undefined)).toBe(`HTTP/1.1 299 \r\ndate: ${DATE}\r\n\r\n`);
  });
});

test("asksToClose: a close token in the app's Connection, from a Headers or a record", () => {
  for (const [value, want] of [["close", true], ["Keep-Alive, CLOSE", true], ["keep-alive", false], ["closed", false]] as const) {
    expect(asksToClose(new Headers({ connection: value }))).toBe(want);
    expect(asksToClose({ connection: value })).toBe(want);
  }
  expect(asksToClose({})).toBe(false);
  expect(asksToClose(new Headers())).toBe(false);
});

test("httpDate is IMF-fixdate", () => {
  expect(httpDate(Date.UTC(2026, 11, 7, 7, 5, 9))).toBe("Mon, 07 Dec 2026 07:05:09 GMT");
});
