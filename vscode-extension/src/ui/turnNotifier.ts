// Notifications for a conversation the user is not looking at: its turn ended while the window
// or the conversation is not focused (its chat has not got keyboard focus), or the agent asks a
// permission question while the window is not focused (in a focused one its modal is in
// front). The notification names the conversation and has Show, which reveals it. The setting
// `acp.notifications` ("unfocused", the default, or "never") turns them off. The rule and the
// words are sessions/attention.ts.

import * as vscode from "vscode";
import { notificationText, shouldNotify, type NotifyMode, type TurnEvent } from "../sessions/attention";

export class TurnNotifier {
  constructor(
    /** Whether the conversation's chat has keyboard focus. */
    private readonly conversationFocused: () => boolean,
    /** Shows the conversation (its view or tab), focused. */
    private readonly reveal: () => void,
    private readonly mode: () => NotifyMode = () => vscode.workspace.getConfiguration("acp").get<NotifyMode>("notifications", "unfocused"),
  ) {}

  /** Tells the user about `e` in conversation `title`, when they are not looking at it. */
  notify(title: string | undefined, e: TurnEvent): void {
    const attention = { windowFocused: vscode.window.state.focused, conversationFocused: this.conversationFocused() };
    if (!shouldNotify(this.mode(), attention, e)) return;
    const show = "Show";
    const text = notificationText(title, e);
    const shown = e.kind === "permission" ? vscode.window.showWarningMessage(text, show) : vscode.window.showInformationMessage(text, show);
    void shown.then((pick) => pick === show && this.reveal());
  }
}
