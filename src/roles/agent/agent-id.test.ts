// The default agent id: stable per (host name, namespace, HTTP port), random with port 0.
import { expect, test } from "bun:test";
import { defaultAgentId } from "./start.ts";

test("the default agent id is the same for the same host, namespace and port, and random with port 0", () => {
  const id = defaultAgentId("node-a", "dynamo", 9091);
  expect(id).toMatch(/^agent-[0-9a-f]{12}$/);
  expect(defaultAgentId("node-a", "dynamo", 9091)).toBe(id);
  for (const other of [defaultAgentId("node-b", "dynamo", 9091), defaultAgentId("node-a", "other", 9091), defaultAgentId("node-a", "dynamo", 9092)]) expect(other).not.toBe(id);
  expect(defaultAgentId("node-a", "dynamo", 0)).not.toBe(defaultAgentId("node-a", "dynamo", 0));
});
