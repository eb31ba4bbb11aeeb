// The history list (`ACP: Session History`): this workspace's saved conversations, newest
// first, with the agent's own sessions (`session/list`, when it offers it) that are not saved
// here; picking one reopens it (SessionController.openSaved, src/host/sessionController.ts).

import * as vscode from "vscode";
import { when, type HistoryEntry } from "./store";

export type { HistoryEntry } from "./store";

export async function pickSession(entries: HistoryEntry[], current: string | undefined): Promise<HistoryEntry | undefined> {
  if (entries.length === 0) {
    void vscode.window.showInformationMessage("ACP: no saved sessions in this workspace yet.");
    return undefined;
  }
  const items = entries.map((e) => ({
    label: `${e.sessionId === current ? "$(comment-discussion) " : ""}${e.title}`,
    description: [e.agentTitle || e.agent, when(e.updatedAt), e.saved ? "" : "(from the agent)"].filter(Boolean).join(" · "),
    detail: e.sessionId,
    entry: e,
  }));
  const pick = await vscode.window.showQuickPick(items, { title: "ACP: reopen a session", matchOnDescription: true, matchOnDetail: true });
  return pick?.entry;
}
