// Entry for `bun build --compile` and `bun src/cli.ts`: runs the root command, nothing else. No
// top-level await, so the binary can be compiled to bytecode (faster start).
import { main } from "./cli/main.ts";

main(process.argv.slice(2)).then((code) => process.exit(code));
