// A request body read with a size cap: chunk by chunk, stopping (and cancelling the stream) as soon
// as it passes `max`, so a body without a content-length cannot make a server buffer it whole.
import { concatBytes } from "./bytes.ts";

export type BodyReader = { read(): Promise<{ done: true; value?: undefined } | { done: false; value: Uint8Array }>; cancel(): Promise<void> };

/** The body as text, or undefined when it is longer than `max` bytes. */
export async function readCapped(reader: BodyReader, max: number): Promise<string | undefined> {
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > max) {
      void reader.cancel().catch(() => {});
      return undefined;
    }
    parts.push(value);
  }
  return new TextDecoder().decode(parts.length === 1 ? parts[0] : concatBytes(parts, size));
}
