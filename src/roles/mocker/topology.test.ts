import { expect, test } from "bun:test";
import { readTopology, workerDomain } from "./topology.ts";

test("labels from DYN_TOPOLOGY_*, domain from DYN_KV_TRANSFER_DOMAIN", () => {
  const t = readTopology({ DYN_TOPOLOGY_RACK: "r7", DYN_TOPOLOGY_ZONE: "z1", DYN_TOPOLOGY_EMPTY: "", DYN_KV_TRANSFER_DOMAIN: "nvl72", PATH: "/bin" });
  expect(t).toEqual({ labels: { rack: "r7", zone: "z1" }, domain: "nvl72" });
});

test("island size N gives worker i the suffix -floor(i/N)", () => {
  const t = readTopology({ DYN_KV_TRANSFER_DOMAIN: "nvl72" });
  expect([0, 1, 2, 3, 4].map((i) => workerDomain(t, i, 2))).toEqual(["nvl72-0", "nvl72-0", "nvl72-1", "nvl72-1", "nvl72-2"]);
  expect(workerDomain(t, 3, undefined)).toBe("nvl72");
  expect(workerDomain(readTopology({}), 3, 2)).toBe("default-1");
  expect(workerDomain(readTopology({}), 3, undefined)).toBeUndefined();
});
