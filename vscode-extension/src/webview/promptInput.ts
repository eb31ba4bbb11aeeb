// The prompt input's pure parts (no DOM, tested under node): which completion the text at the
// caret asks for (`/command` at the start, `@mention` after a space or at the start), the
// agent's commands that match, the text after a completion is chosen, and the words the chat
// shows for statuses. (A stop reason's words are acp-client's, sent by the host with the delta
// that ends the turn.)

export interface CompletionContext {
  trigger: "/" | "@";
  /** What was typed after the trigger. */
  query: string;
  /** Where the trigger is in the text. */
  start: number;
}

/** The completion the caret is in, if any. */
export function completionContext(text: string, caret: number): CompletionContext | null {
  const before = text.slice(0, caret);
  const slash = /^\/([\w.:-]*)$/.exec(before);
  if (slash) return { trigger: "/", query: slash[1] ?? "", start: 0 };
  const at = /(^|\s)@([^\s@]*)$/.exec(before);
  if (at) {
    const query = at[2] ?? "";
    return { trigger: "@", query, start: before.length - query.length - 1 };
  }
  return null;
}

export interface Command {
  name: string;
  description: string;
  hint?: string | null;
}

/** The commands whose name starts with `query` (then those containing it), at most `max`. */
export function matchCommands(commands: readonly Command[], query: string, max = 20): Command[] {
  const q = query.toLowerCase();
  const starts = commands.filter((c) => c.name.toLowerCase().startsWith(q));
  const contains = commands.filter((c) => !c.name.toLowerCase().startsWith(q) && c.name.toLowerCase().includes(q));
  return [...starts, ...contains].slice(0, max);
}

/** The text after choosing a completion: the trigger and query replaced by `insert`. */
export function applyCompletion(text: string, caret: number, ctx: CompletionContext, insert: string): { text: string; caret: number } {
  const head = text.slice(0, ctx.start) + insert;
  return { text: head + text.slice(caret), caret: head.length };
}

/** A tool call's or plan entry's status, in words; `turnOver`: the turn has ended, so what was
 *  still pending or running did not finish (after a cancel or a crash). */
export function statusWords(status: string, turnOver = false): string {
  if (turnOver && (status === "pending" || status === "in_progress")) return "Not finished";
  switch (status) {
    case "pending":
      return "Pending";
    case "in_progress":
      return "Running";
    case "completed":
      return "Done";
    case "failed":
      return "Failed";
    case "cancelled":
      return "Cancelled";
    default:
      return status.replace(/_/g, " ");
  }
}

/** The codicon for a status (see statusWords). */
export function statusIcon(status: string, turnOver = false): string {
  if (turnOver && (status === "pending" || status === "in_progress")) return "circle-slash";
  return (
    { pending: "circle-large-outline", in_progress: "loading", completed: "pass", failed: "error", cancelled: "circle-slash" }[status] ??
    "question"
  );
}

/** Reads a pasted or picked file as an attachment's base64 `data` (the part after the comma of a
 *  data: URL). */
export function base64OfDataUrl(url: string): string {
  const i = url.indexOf(",");
  return i < 0 ? "" : url.slice(i + 1);
}
