// Public surface of the ZeroMQ transport: PUB, SUB, ROUTER, DEALER over Bun TCP (ZMTP 3.1, NULL).
export { PubSocket } from "./pub-socket.ts";
export { SubSocket } from "./sub-socket.ts";
export { RouterSocket } from "./router-socket.ts";
export { DealerSocket } from "./dealer-socket.ts";
export type { ZmtpSocket, ZmtpSocketStats } from "./zmtp-socket.ts";
export type { ReceivingSocket } from "./receiving-socket.ts";
export type { Frames, MessageHandler } from "./inbox.ts";
export { DEFAULT_OPTIONS, type Frame, type ZmtpSocketOptions } from "./options.ts";
export { parseEndpoint, formatEndpoint, type TcpEndpoint } from "../../protocol/zmtp/endpoint.ts";
