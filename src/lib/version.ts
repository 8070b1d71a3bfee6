// The version every command and role reports (`--version`, `/version`): package.json's version,
// plus the build's commit when it is a compiled binary (`0.1.0+a2f1721`, `+a2f1721.dirty` when the
// tree had uncommitted changes), or `+source` when run from a checkout (scripts/lib/compile.ts defines
// KVCR_BUILD_COMMIT at build time; nothing is looked up at run time).
import pkg from "../../package.json" with { type: "json" };

declare const KVCR_BUILD_COMMIT: string | undefined;

const commit = typeof KVCR_BUILD_COMMIT === "string" ? KVCR_BUILD_COMMIT : "source";

export const VERSION: string = `${pkg.version}+${commit}`;
