// When a conversation's events are told to a user who is not looking at it (the rule, and the
// notification's words); ui/turnNotifier.ts shows them.
//
// Architecture Invariant: this file does not import `vscode`.

/** Where the user's attention is. */
export interface Attention {
  /** The VS Code window has OS focus (vscode.window.state.focused). */
  windowFocused: boolean;
  /** The conversation's chat has keyboard focus. */
  conversationFocused: boolean;
}

export type NotifyMode = "unfocused" | "never";

/** What a notification is about. */
export type TurnEvent = { kind: "ended"; words: string } | { kind: "permission"; title: string };

/** Whether to tell the user about `e` (the rule, alone for tests): a turn's end when the window
 *  or the conversation is not focused; a permission question when the window is not (in a
 *  focused window its modal is in front of the user already). */
export function shouldNotify(mode: NotifyMode, a: Attention, e: TurnEvent): boolean {
  if (mode === "never") return false;
  return e.kind === "permission" ? !a.windowFocused : !(a.windowFocused && a.conversationFocused);
}

/** The notification's text for `e` in conversation `title` (one line). */
export function notificationText(title: string | undefined, e: TurnEvent): string {
  const where = title ? `"${title.length > 60 ? `${title.slice(0, 59)}…` : title}"` : "the conversation";
  return e.kind === "ended" ? `ACP: the turn in ${where} ended: ${e.words}` : `ACP: the agent asks permission in ${where}: ${e.title}`;
}
