// Public surface of the pure ZMTP 3.1 codec (parser, encoder, commands, subscription matching).
export * from "./constants.ts";
export * from "./commands.ts";
export * from "./encoder.ts";
export * from "./parser.ts";
export * from "./subscriptions.ts";
export * from "./endpoint.ts";
