// Preloaded by the package.json test scripts: once the whole run is over, the harness's temp root
// goes at once. Without it (a bare `bun test`) the janitor removes it as the test process exits.
import { afterAll } from "bun:test";
import { removeTestTempRoot } from "./harness.ts";

afterAll(removeTestTempRoot);
