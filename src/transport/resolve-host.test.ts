import { expect, test } from "bun:test";
import { assertResolvable } from "./resolve-host.ts";

const failing = (code: string) => async () => {
  throw Object.assign(new Error(`getaddrinfo ${code}`), { code });
};

test("a name the resolver does not know is an error naming it", async () => {
  await expect(assertResolvable("nope.invalid", "--endpoint tcp://nope.invalid:1", failing("ENOTFOUND"))).rejects.toThrow(
    '--endpoint tcp://nope.invalid:1: host "nope.invalid" does not resolve (ENOTFOUND)',
  );
});

test("IP literals are never looked up", async () => {
  let asked = 0;
  const count = async () => void asked++;
  await assertResolvable("127.0.0.1", "x", count);
  await assertResolvable("[::1]", "x", count);
  expect(asked).toBe(0);
});

test("a host name is looked up", async () => {
  let asked = 0;
  const count = async () => void asked++;
  await assertResolvable("localhost", "x", count);
  expect(asked).toBe(1);
});

test("a temporary DNS failure is left to the dialer's retries", async () => {
  await assertResolvable("flaky.example", "x", failing("EAI_AGAIN"));
});
