// Logging interfaces the protocol code writes to; the VS Code side implements them with output
// channels. Keeping them here keeps `vscode` out of src/protocol.

export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** Raw wire trace: every chunk written to / read from the agent, verbatim. */
export interface TraceSink {
  readonly enabled: boolean;
  write(direction: "send" | "recv" | "stderr", text: string): void;
}

export const nullLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
export const nullTrace: TraceSink = { enabled: false, write() {} };

/** JSON for a log line, cut to `max` characters (whole string when shorter). */
export function truncateJson(value: unknown, max = 200): string {
  let s: string;
  try {
    s = value === undefined ? "" : JSON.stringify(value);
  } catch {
    s = String(value);
  }
  return truncateText(s, max);
}

/** Text (e.g. JSON already stringified) for a log line, cut like truncateJson. */
export function truncateText(s: string, max = 200): string {
  if (s.length <= max) return s;
  return `${s.slice(0, max)}… (${s.length} chars)`;
}
