// The size line of one chunk of a chunked HTTP/1.1 body, fed byte by byte: hex digits (at most 12),
// then `;name=value` extensions (and whitespace before them), which are ignored. The request reader
// (server) and the response reader (client) frame chunked bodies with it.
const SEMICOLON = 59;
const SPACE = 32;
const TAB = 9;

export class ChunkSizeLine {
  /** The chunk size read so far. */
  size = 0;
  private digits = 0;
  private inExtension = false;

  reset(): void {
    this.size = 0;
    this.digits = 0;
    this.inExtension = false;
  }

  /** One byte of the line (CR and LF are the caller's): the problem it makes, or undefined. */
  take(c: number): string | undefined {
    if (this.inExtension) return undefined;
    const digit = hexValue(c);
    if (digit >= 0) {
      if (++this.digits > 12) return "bad chunk size: more than 12 hex digits";
      this.size = this.size * 16 + digit;
      return undefined;
    }
    if (c === SEMICOLON || c === SPACE || c === TAB) {
      this.inExtension = true;
      return undefined;
    }
    return `bad chunk size: unexpected ${JSON.stringify(String.fromCharCode(c))}`;
  }

  /** The problem with the line once its CRLF came, or undefined. */
  ended(): string | undefined {
    return this.digits === 0 ? "bad chunk size: an empty chunk-size line" : undefined;
  }
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  const lower = c | 0x20;
  return lower >= 97 && lower <= 102 ? lower - 87 : -1;
}
