import { expect, test } from "bun:test";
import { hostname } from "node:os";
import { recordOwnerAlive } from "./process-alive.ts";

const dead = 2 ** 22 + 12_345; // above the largest pid Linux allows (2^22): never a live process

test("a record's writer: its pid decides on the file backend, and on etcd only when it names this host", () => {
  expect(recordOwnerAlive("file", { pid: process.pid })).toBe(true);
  expect(recordOwnerAlive("file", { pid: dead })).toBe(false);
  expect(recordOwnerAlive("etcd", { pid: dead, host: hostname() })).toBe(false);
  expect(recordOwnerAlive("etcd", { pid: process.pid, host: hostname() })).toBe(true);
  // Another host's pid, or a writer that did not say where it runs: its lease decides.
  expect(recordOwnerAlive("etcd", { pid: dead, host: `${hostname()}-elsewhere` })).toBe(true);
  expect(recordOwnerAlive("etcd", { pid: dead })).toBe(true);
});
