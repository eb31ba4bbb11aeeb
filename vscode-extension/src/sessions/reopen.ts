// How a saved session can be reopened with an agent, from its `initialize` answer:
// `session/resume` (no replay; the conversation shown is the one saved here) when it
// advertises sessionCapabilities.resume, else `session/load` (the agent replays it) when
// loadSession, else nothing: the saved conversation is shown read-only and the next prompt
// continues it in a new session.
//
// Architecture Invariant: this file does not import `vscode`.

export type ReopenHow = "resume" | "load" | "readonly";

interface Caps {
  agentCapabilities?: { loadSession?: boolean | null; sessionCapabilities?: { resume?: unknown; list?: unknown } | null } | null;
}

/** `preferLoad`: nothing of the conversation is saved here, so the agent's replay is wanted. */
export function reopenHow(init: Caps, preferLoad = false): ReopenHow {
  const caps = init.agentCapabilities;
  if (preferLoad && caps?.loadSession === true) return "load";
  if (caps?.sessionCapabilities?.resume != null) return "resume";
  if (caps?.loadSession === true) return "load";
  return "readonly";
}

/** The agent offers `session/list`. */
export function canList(init: Caps): boolean {
  return init.agentCapabilities?.sessionCapabilities?.list != null;
}
