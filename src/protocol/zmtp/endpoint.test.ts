import { describe, expect, test } from "bun:test";
import { formatEndpoint, parseEndpoint } from "./endpoint.ts";

const errorOf = (endpoint: string, use: "bind" | "connect" = "connect") => {
  try {
    parseEndpoint(endpoint, use);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error(`${endpoint} was accepted`);
};

describe("parseEndpoint", () => {
  test.each([
    ["tcp://127.0.0.1:5557", "127.0.0.1", 5557],
    ["tcp://localhost:1", "localhost", 1],
    ["tcp://worker-3.example.com:5557", "worker-3.example.com", 5557],
    ["tcp://kv_worker_1:5557", "kv_worker_1", 5557], // compose-style service names
    ["tcp://host.example.:5557", "host.example.", 5557],
    ["tcp://[::1]:5557", "::1", 5557],
    ["tcp://[fd00:0:0:0:0:0:0:1]:5557", "fd00:0:0:0:0:0:0:1", 5557],
    ["tcp://[::ffff:127.0.0.1]:5557", "::ffff:127.0.0.1", 5557],
    ["tcp://[fe80::1%eth0]:5557", "fe80::1%eth0", 5557],
    ["tcp://::1:5557", "::1", 5557], // libzmq also takes an unbracketed IPv6 (the port follows the last colon)
  ])("connect %s", (endpoint, host, port) => {
    expect(parseEndpoint(endpoint, "connect")).toEqual({ host, port });
  });

  test("bind: * for any address and * or 0 for an ephemeral port", () => {
    expect(parseEndpoint("tcp://*:*", "bind")).toEqual({ host: "0.0.0.0", port: 0 });
    expect(parseEndpoint("tcp://[::]:0", "bind")).toEqual({ host: "::", port: 0 });
    expect(errorOf("tcp://*:5557")).toContain("HOST `*` is only valid for bind");
  });

  test.each([
    ["tcp://[::1:5557", 'HOST "[::1" has an unbalanced bracket'],
    ["tcp://::1]:5557", 'HOST "::1]" has an unbalanced bracket'],
    ["tcp://a b:5557", 'HOST "a b" is not a hostname, IPv4 or IPv6 address (bad character " ")'],
    ["tcp://user@h:1", 'HOST "user@h" is not a hostname, IPv4 or IPv6 address (bad character "@")'],
    ["tcp://h/path:1", 'HOST "h/path" is not a hostname, IPv4 or IPv6 address (bad character "/")'],
    ["tcp://-h:1", 'HOST "-h" is not a hostname: label "-h" starts or ends with "-"'],
    ["tcp://a..b:1", 'HOST "a..b" is not a hostname: empty label'],
    [`tcp://${"a".repeat(64)}:1`, "is not a hostname: label of 64 characters (at most 63)"],
    ["tcp://256.1.1.1:1", 'HOST "256.1.1.1" is not a valid IPv4 address (four numbers 0-255)'],
    ["tcp://1.2.3:1", 'HOST "1.2.3" is not a valid IPv4 address (four numbers 0-255)'],
    ["tcp://a:b:5557", 'HOST "a:b" is not a valid IPv6 address'],
    ["tcp://[1::2::3]:1", 'HOST "[1::2::3]" is not a valid IPv6 address'],
    ["tcp://[12345::1]:1", 'HOST "[12345::1]" is not a valid IPv6 address'],
    ["tcp://[1:2:3:4:5:6:7:8:9]:1", 'HOST "[1:2:3:4:5:6:7:8:9]" is not a valid IPv6 address'],
    ["tcp://[]:1", "missing HOST"],
    ["tcp://[*]:1", 'HOST "[*]" is not a valid IPv6 address'],
  ])("refuses %s naming the endpoint and the problem", (endpoint, why) => {
    const message = errorOf(endpoint, "bind");
    expect(message).toStartWith(`invalid ZeroMQ endpoint "${endpoint}": `);
    expect(message).toContain(why);
  });

  test("port 65535 and a 253-character hostname are the largest accepted", () => {
    expect(parseEndpoint("tcp://h:65535", "connect").port).toBe(65535);
    const name = (last: number) => `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(last)}`;
    expect(parseEndpoint(`tcp://${name(61)}:1`, "connect").host).toBe(name(61));
    expect(() => parseEndpoint(`tcp://${name(62)}:1`, "connect")).toThrow("254 characters (at most 253)");
  });

  test("formatEndpoint brackets IPv6 and round-trips", () => {
    for (const host of ["127.0.0.1", "::1", "fe80::1%eth0", "localhost"]) {
      expect(parseEndpoint(formatEndpoint(host, 9), "connect")).toEqual({ host, port: 9 });
    }
  });
});
