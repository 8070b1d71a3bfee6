// Entry for `bun build --compile` and `bun src/cli.ts`: runs the root command, nothing else.
import { main } from "./cli/main.ts";

process.exit(await main(process.argv.slice(2)));
