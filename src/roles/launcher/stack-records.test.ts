import { expect, test } from "bun:test";
import { workerRecord } from "../../../test/routing/fake-fleet.ts";
import type { DiscoveryStore } from "../../discovery/store.ts";
import type { ProcessEndpoints } from "./stack-records.ts";
import { addWorkerEndpoints } from "./stack-records.ts";

/** A store listing the given worker records of one mocker (its HTTP port 7000). */
function storeOf(apiPorts: number[], rawPorts: number[]): DiscoveryStore {
  const records = apiPorts.map((port, i) =>
    workerRecord(`w${i}`, { worker_index: i, model: "m", request_url: "http://127.0.0.1:7000/v1/generate", raw_endpoints: [`tcp://127.0.0.1:${rawPorts[i]}`], openai_url: `http://127.0.0.1:${port}` }),
  );
  return { list: async () => records.map((value, i) => ({ key: `ns/workers/w${i}`, value })) } as unknown as DiscoveryStore;
}

test("a mocker's picked ports and worker API URLs come from its records, and again after a restart picked new ones", async () => {
  const p: ProcessEndpoints = { role: "mocker", ports: { http: 7000, zmqKvEvents: [0, 0], openai: [0, 0] } };
  await addWorkerEndpoints(storeOf([30000, 30001], [40000, 40001]), { namespace: "ns", modelName: "m" }, [p]);
  expect(p.workerApiUrls).toEqual(["http://127.0.0.1:30000", "http://127.0.0.1:30001"]);
  expect(p.ports).toEqual({ http: 7000, zmqKvEvents: [40000, 40001], openai: [30000, 30001] });
  await addWorkerEndpoints(storeOf([31000, 31001], [41000, 41001]), { namespace: "ns", modelName: "m" }, [p]);
  expect(p.workerApiUrls).toEqual(["http://127.0.0.1:31000", "http://127.0.0.1:31001"]);
  expect(p.ports).toEqual({ http: 7000, zmqKvEvents: [41000, 41001], openai: [31000, 31001] });
});
