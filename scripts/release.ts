// `npm run release`: every target's binary into dist/release/ as kvcr-mock-<version>-<os>-<arch>
// (.exe on Windows), a .tar.gz of each beside it (`kvcr-mock[.exe]`, LICENSE and
// THIRD_PARTY_NOTICES.txt inside; Windows 10+ and macOS extract it with their own tar), SHA256SUMS
// over every file, and manifest.json (version, commit, per target: files, sizes, checksums, build
// mode). Bun fetches each target's runtime from the npm registry on first use. Bytecode (faster
// start) where the target takes it; a target that refuses it is built without and the manifest
// says so.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { buildCommit, compile, ROOT } from "./lib/compile.ts";

export const TARGETS = [
  { os: "linux", arch: "x64", bun: "bun-linux-x64" },
  // For x64 CPUs without AVX2, which the default runtime needs (install.sh picks it there).
  { os: "linux", arch: "x64-baseline", bun: "bun-linux-x64-baseline" },
  { os: "linux", arch: "x64-musl", bun: "bun-linux-x64-musl" },
  { os: "linux", arch: "arm64", bun: "bun-linux-arm64" },
  { os: "darwin", arch: "x64", bun: "bun-darwin-x64" },
  { os: "darwin", arch: "arm64", bun: "bun-darwin-arm64" },
  { os: "windows", arch: "x64", bun: "bun-windows-x64" },
] as const;

const outDir = resolve(process.argv[2] ?? join(ROOT, "dist/release"));
const only = process.env.KVCR_RELEASE_TARGETS?.split(",").filter(Boolean);

interface ReleaseFile {
  name: string;
  bytes: number;
  sha256: string;
}

const sha256 = (path: string) => new Bun.CryptoHasher("sha256").update(readFileSync(path)).digest("hex");

// Only a directory an earlier release made (or an empty/new one) is cleared: a mistyped path is left alone.
if (existsSync(outDir) && readdirSync(outDir).length > 0 && !existsSync(join(outDir, "manifest.json"))) {
  console.error(`${outDir} is not empty and holds no manifest.json (not a release directory): not clearing it`);
  process.exit(1);
}
rmSync(outDir, { recursive: true, force: true });
mkdirSync(outDir, { recursive: true });
const commit = await buildCommit();
const notices = thirdPartyNotices();
const entries: { os: string; arch: string; bun_target: string; bytecode: boolean; binary: ReleaseFile; archive: ReleaseFile }[] = [];
for (const t of TARGETS) {
  const name = `${t.os}-${t.arch}`;
  if (only && !only.includes(name)) continue;
  const exe = t.os === "windows" ? ".exe" : "";
  const binary = `kvcr-mock-${pkg.version}-${name}${exe}`;
  const started = performance.now();
  let bytecode = true;
  try {
    await compile({ outfile: join(outDir, binary), target: t.bun, commit, bytecode });
  } catch (err) {
    // Said, not swallowed: a failure that is not about bytecode fails again below, loudly.
    console.warn(`${name}: the bytecode build failed (${(err as Error).message.split("\n")[0]}); building without bytecode`);
    bytecode = false;
    await compile({ outfile: join(outDir, binary), target: t.bun, commit, bytecode });
  }
  // The archive holds the binary under its plain name, as install.sh and a user unpacking it expect.
  const stage = join(outDir, `.stage-${name}`);
  mkdirSync(stage);
  writeFileSync(join(stage, `kvcr-mock${exe}`), readFileSync(join(outDir, binary)), { mode: 0o755 });
  writeFileSync(join(stage, "LICENSE"), readFileSync(join(ROOT, "LICENSE")));
  writeFileSync(join(stage, "THIRD_PARTY_NOTICES.txt"), notices);
  const archive = `kvcr-mock-${pkg.version}-${name}.tar.gz`;
  const tar = Bun.spawnSync(["tar", "-czf", join(outDir, archive), "-C", stage, `kvcr-mock${exe}`, "LICENSE", "THIRD_PARTY_NOTICES.txt"], { stderr: "pipe" });
  rmSync(stage, { recursive: true, force: true });
  if (tar.exitCode !== 0) throw new Error(`tar of ${archive} failed: ${tar.stderr.toString()}`);
  const file = (f: string) => ({ name: f, bytes: statSync(join(outDir, f)).size, sha256: sha256(join(outDir, f)) });
  const entry = { os: t.os, arch: t.arch, bun_target: t.bun, bytecode, binary: file(binary), archive: file(archive) };
  entries.push(entry);
  console.log(`${name}: ${binary} (${(entry.binary.bytes / 2 ** 20).toFixed(0)} MiB${bytecode ? ", bytecode" : ""}), ${archive} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}
const sums = entries.flatMap((e) => [e.binary, e.archive]).map((f) => `${f.sha256}  ${f.name}\n`).join("");
writeFileSync(join(outDir, "SHA256SUMS"), sums);
const manifest = { name: "kvcr-mock", version: `${pkg.version}+${commit}`, package_version: pkg.version, commit, targets: entries };
writeFileSync(join(outDir, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
console.log(`${entries.length} target(s) in ${outDir}: SHA256SUMS, manifest.json`);

/** The licenses of the packages bundled into the binary (package.json's dependencies), and where the runtime's are. */
function thirdPartyNotices(): string {
  const parts = [
    "kvcr-mock bundles the following packages into its binary. Their licenses follow.",
    "The binary also embeds the Bun runtime (https://bun.sh, MIT); the licenses of Bun and of the components it bundles are listed at https://bun.sh/docs/project/licensing.",
    "Its built-in traces (builtin:mooncake-conversation, builtin:mooncake-synthetic) are data files copied from kvcache-ai/Mooncake (FAST25-release/traces), licensed Apache-2.0.",
  ];
  for (const dep of Object.keys(pkg.dependencies)) {
    const dir = join(ROOT, "node_modules", dep);
    const file = readdirSync(dir).find((f) => /^licen[cs]e/i.test(f));
    if (file === undefined) throw new Error(`no license file in node_modules/${dep}: cannot write THIRD_PARTY_NOTICES.txt`);
    const version = (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version: string }).version;
    parts.push(`${"=".repeat(72)}\n${dep} ${version}\n${"=".repeat(72)}\n${readFileSync(join(dir, file), "utf8").trim()}`);
  }
  return parts.join("\n\n") + "\n";
}
