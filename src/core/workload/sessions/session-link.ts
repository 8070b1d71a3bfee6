// How a turn of a session hangs on the one before it: the session and turn it is, the request it
// waits for, and the think time after that request finishes. A turn that extends its predecessor
// (chat text turns, the synthetic agentic workload) is sent as the predecessor's prompt, plus the
// tokens it actually generated, plus its own new segment.

export interface SessionLink {
  /** Session number, 0-based in order of the session's first turn in the trace or generator. */
  readonly session: number;
  /** 1-based turn index within the session (a root is turn 1). */
  readonly turn: number;
  /** Workload index of the turn this one waits for; -1 for a session's first turn. */
  readonly previous: number;
  /** Sent this long (ms) after `previous` finished; 0 on a first turn. */
  readonly delayMs: number;
  /**
   * The prompt is the predecessor's prompt + its generated tokens + this request's own tokens:
   * inputLength and writeTokens then describe only the new segment.
   */
  readonly extendsPrevious?: boolean;
}

