// The launcher's API for other roles and scripts (e.g. `bench --compare-router-modes`): build an
// `up` config from flags, start a stack with it, read its URLs, close it.
//
//   await using stack = await startStack(upConfigFrom(["--router-mode", "round-robin", "--http-port", "0", "--agent-port", "0"]), { logger });
//   stack.frontendUrl; stack.agentUrl; stack.processes; await stack.failure (a child died)
export { upConfigFrom } from "../../config/up.ts";
export { plan, type ProcessSpec, type StackPlan } from "./plan.ts";
export { startStack, type StackDeps, type StackHandle, type StackProcess, type StackState } from "./start.ts";
export { describeExit, type ChildExit } from "./supervisor.ts";
