// install.sh against a release directory made here (a stand-in binary: a shell script that prints
// its version), so every path runs offline and fast: it installs the archive for this machine and
// reports the version, and it installs nothing when the checksum does not match, when no archive
// fits this machine, or when the binary does not run.
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT, runCli, tempDir } from "../harness.ts";

const INSTALL = join(REPO_ROOT, "install.sh");
/** Every Linux name install.sh may pick here (glibc or musl, with or without AVX2, either CPU). */
const LINUX_NAMES = ["linux-x64", "linux-x64-baseline", "linux-x64-musl", "linux-arm64"];

async function release(dir: string, binary: string, names = LINUX_NAMES): Promise<void> {
  const stage = join(dir, "stage");
  mkdirSync(stage, { recursive: true });
  writeFileSync(join(stage, "kvcr-mock"), binary, { mode: 0o755 });
  const sums: string[] = [];
  for (const name of names) {
    const archive = `kvcr-mock-9.9.9-${name}.tar.gz`;
    const tar = await runCli(["-czf", join(dir, archive), "-C", stage, "kvcr-mock"], { bin: "tar" });
    expect(tar.exitCode).toBe(0);
    sums.push(`${new Bun.CryptoHasher("sha256").update(readFileSync(join(dir, archive))).digest("hex")}  ${archive}`);
  }
  writeFileSync(join(dir, "SHA256SUMS"), sums.join("\n") + "\n");
}

const install = (from: string, prefix: string) => runCli([INSTALL, "--from", from, "--prefix", prefix], { bin: "/bin/sh" });

describe.skipIf(process.platform !== "linux")("install.sh", () => {
  test("installs this machine's archive from a release directory, SHA-256 verified, and says which version", async () => {
    using dir = tempDir("kvcr-install-");
    await release(dir.path, "#!/bin/sh\necho 9.9.9+abc1234\n");
    const r = await install(dir.path, join(dir.path, "prefix"));
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain("installed 9.9.9+abc1234 (linux-");
    expect(r.stdout).toContain("SHA-256 verified");
    expect(existsSync(join(dir.path, "prefix/bin/kvcr-mock"))).toBe(true);
  });

  test("a tampered archive: exit 1 naming the mismatch, nothing installed", async () => {
    using dir = tempDir("kvcr-install-");
    await release(dir.path, "#!/bin/sh\necho 9.9.9\n");
    for (const name of LINUX_NAMES) writeFileSync(join(dir.path, `kvcr-mock-9.9.9-${name}.tar.gz`), "not the archive the sums name");
    const r = await install(dir.path, join(dir.path, "prefix"));
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain("does not match SHA256SUMS");
    expect(existsSync(join(dir.path, "prefix"))).toBe(false);
  });

  test("bad arguments: exit 1 naming the problem, before anything is read", async () => {
    const none = await runCli([INSTALL], { bin: "/bin/sh" });
    expect([none.exitCode, none.stderr.trim()]).toEqual([1, "install.sh: say where the release is: --from DIR or --url BASE_URL"]);
    const unknown = await runCli([INSTALL, "--form", "x"], { bin: "/bin/sh" });
    expect([unknown.exitCode, unknown.stderr.trim()]).toEqual([1, "install.sh: unknown argument --form (try --help)"]);
    const dangling = await runCli([INSTALL, "--from"], { bin: "/bin/sh" });
    expect([dangling.exitCode, dangling.stderr.trim()]).toEqual([1, "install.sh: --from needs a directory"]);
    using dir = tempDir("kvcr-install-");
    const missing = await install(join(dir.path, "nowhere"), join(dir.path, "prefix"));
    expect([missing.exitCode, missing.stderr.trim()]).toEqual([1, `install.sh: ${join(dir.path, "nowhere")}/SHA256SUMS not found`]);
  });

  test("no archive for this machine, or a binary that does not run here: exit non-zero, saying why", async () => {
    using none = tempDir("kvcr-install-");
    await release(none.path, "#!/bin/sh\necho 9.9.9\n", ["darwin-arm64"]);
    const missing = await install(none.path, join(none.path, "prefix"));
    expect(missing.exitCode).toBe(1);
    expect(missing.stderr).toContain("the release has no archive for linux-");
    using broken = tempDir("kvcr-install-");
    await release(broken.path, "#!/bin/sh\necho 'cannot execute binary file' >&2\nexit 126\n");
    const r = await install(broken.path, join(broken.path, "prefix"));
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain("does not run on this machine: cannot execute binary file; nothing installed");
    expect(existsSync(join(broken.path, "prefix"))).toBe(false);
  });
});
