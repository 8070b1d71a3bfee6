// Plain TCP for byte protocols of other systems (Dynamo's request and response planes): a
// listener and a dialer whose connections write in order (what the kernel did not take waits for
// drain) and hand received chunks to the caller. The one place besides zmtp/ and http/ that opens
// TCP sockets.
import type { Socket, TCPSocketListener } from "bun";
import { SocketWriter } from "./socket-writer.ts";

export interface TcpConnection {
  write(bytes: Uint8Array): void;
  /** Ends the connection once everything written has gone. */
  end(): void;
}

export interface TcpHandlers {
  data(conn: TcpConnection, chunk: Uint8Array): void;
  close?(conn: TcpConnection): void;
  error?(err: Error): void;
}

interface State {
  conn: TcpConnection;
  writer: SocketWriter;
}

function wrap(s: Socket<State | undefined>): State {
  const writer = new SocketWriter(s as Socket<unknown>);
  const state = { writer, conn: { write: (b: Uint8Array) => writer.write(b), end: () => writer.end() } };
  s.data = state;
  return state;
}

export interface TcpListener extends Disposable {
  readonly port: number;
}

export function listenTcp(host: string, port: number, handlers: TcpHandlers): TcpListener {
  const open = new Set<Socket<State | undefined>>();
  const listener: TCPSocketListener<State | undefined> = Bun.listen<State | undefined>({
    hostname: host,
    port,
    data: undefined,
    socket: {
      open: (s) => {
        open.add(s);
        wrap(s);
      },
      data: (s, chunk) => handlers.data(s.data!.conn, chunk),
      drain: (s) => s.data?.writer.drain(),
      close: (s) => {
        open.delete(s);
        if (s.data) handlers.close?.(s.data.conn);
      },
      error: (_s, err) => handlers.error?.(err),
    },
  });
  return {
    port: listener.port,
    [Symbol.dispose]() {
      listener.stop(true);
      for (const s of open) s.end();
    },
  };
}

/** Dials `host:port`; `opened` runs with the connection once it is up. Rejects when it cannot connect. */
export async function connectTcp(host: string, port: number, handlers: TcpHandlers & { opened(conn: TcpConnection): void }): Promise<TcpConnection> {
  const socket = await Bun.connect<State | undefined>({
    hostname: host,
    port,
    data: undefined,
    socket: {
      open: (s) => handlers.opened(wrap(s).conn),
      data: (s, chunk) => handlers.data(s.data!.conn, chunk),
      drain: (s) => s.data?.writer.drain(),
      close: (s) => {
        if (s.data) handlers.close?.(s.data.conn);
      },
      error: (_s, err) => handlers.error?.(err),
    },
  });
  return socket.data!.conn;
}
