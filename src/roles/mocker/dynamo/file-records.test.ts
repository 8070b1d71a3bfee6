import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { makeTempDir, waitFor } from "../../../../test/harness.ts";
import { DynamoFileRecords, KEEPALIVE_MS } from "./file-records.ts";

const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} } as never;

describe("Dynamo file records", () => {
  test("one flat percent-encoded file per key, no temp file left; removed at close", async () => {
    await using tmp = await makeTempDir();
    {
      await using records = new DynamoFileRecords(tmp.path, "dynamo/backend/generate/m", quiet);
      await records.put("v1/instances", "dynamo/backend/generate/1f", { a: 1 });
      expect(readdirSync(join(tmp.path, "v1/instances"))).toEqual(["dynamo%2Fbackend%2Fgenerate%2F1f"]);
      expect(JSON.parse(readFileSync(join(tmp.path, "v1/instances/dynamo%2Fbackend%2Fgenerate%2F1f"), "utf8"))).toEqual({ a: 1 });
    }
    expect(readdirSync(join(tmp.path, "v1/instances"))).toEqual([]);
  });

  test("mtimes are touched inside Dynamo's 10 s TTL", async () => {
    await using tmp = await makeTempDir();
    await using records = new DynamoFileRecords(tmp.path, "t", quiet);
    await records.put("v1/mdc", "k", {});
    const path = records.keys[0]!;
    utimesSync(path, new Date(0), new Date(0));
    await waitFor(() => statSync(path).mtimeMs > 0, { what: "the keep-alive touch", timeoutMs: KEEPALIVE_MS * 2 });
  });

  test("a restart removes what a dead process of its kind left behind (a kill -9), never a live one's", async () => {
    await using tmp = await makeTempDir();
    const DEAD_PID = 2 ** 22 + 12_345; // above Linux's pid_max: no such process
    // A live sibling of the same kind (this process) keeps its records through the restarts below.
    await using sibling = new DynamoFileRecords(tmp.path, "dynamo/backend/generate/m", quiet, process.ppid);
    await sibling.put("v1/instances", "dynamo/backend/generate/cc", {});
    const crashed = new DynamoFileRecords(tmp.path, "dynamo/backend/generate/m", quiet, DEAD_PID);
    await crashed.put("v1/instances", "dynamo/backend/generate/aa", {});
    await crashed.put("v1/mdc", "dynamo/backend/generate/aa", {});
    const left = [...crashed.keys];
    // Another kind leaves the dead one's records alone…
    {
      await using other = new DynamoFileRecords(tmp.path, "dynamo/backend/generate/other", quiet);
      expect(left.every(existsSync)).toBe(true);
      expect(other.keys).toEqual([]);
    }
    // …a process of the same kind removes them before writing its own.
    await using again = new DynamoFileRecords(tmp.path, "dynamo/backend/generate/m", quiet);
    expect(left.some(existsSync)).toBe(false);
    expect(sibling.keys.every(existsSync)).toBe(true);
    await again.put("v1/instances", "dynamo/backend/generate/bb", {});
    expect(readdirSync(join(tmp.path, "v1/instances")).sort()).toEqual(["dynamo%2Fbackend%2Fgenerate%2Fbb", "dynamo%2Fbackend%2Fgenerate%2Fcc"]);
    clearInterval((crashed as unknown as { timer: ReturnType<typeof setInterval> }).timer);
  });
});
