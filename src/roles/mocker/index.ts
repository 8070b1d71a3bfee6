// The mocker role's entry under the path the CLI and tests import; the role lives in start.ts.
export { startMocker, type MockerDeps, type MockerHandle } from "./start.ts";
