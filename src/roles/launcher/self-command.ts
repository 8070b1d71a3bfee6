// How `up` runs kvcr-mock itself for each child: from the running executable, never a path inside
// the bundle (a compiled binary's files exist only in its virtual /$bunfs root): the binary alone
// when compiled, else this Bun plus the CLI entry file.
import { fileURLToPath } from "node:url";

/** True inside a `bun build --compile` binary (its modules live under Bun's virtual /$bunfs root). */
export function isCompiled(mainPath: string = Bun.main): boolean {
  return mainPath.startsWith("/$bunfs/") || /^[A-Za-z]:[\\/]~BUN[\\/]/.test(mainPath);
}

export function selfCommand(): string[] {
  if (isCompiled()) return [process.execPath];
  return [process.execPath, fileURLToPath(new URL("../../cli.ts", import.meta.url))];
}
