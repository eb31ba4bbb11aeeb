// Webview routing: each message of the chat view (webview/messages.ts's WebviewToHost) checked
// (it comes from the webview, so every field is checked before use) and handed to the part that
// acts on it: the session controller (prompt, cancel, new session, mode, option), the agent's
// lifecycle (the view loaded and nothing runs: start), the edit review (Keep, Undo, Diff) and
// the diff view; and the editor's selection attached to the prompt.
// One reason to change: a message between the chat view and the host is added or changed.

import * as path from "node:path";
import * as vscode from "vscode";
import { validAttachment, type ViewAttachment } from "../bridges/attachments";
import type { EditReview } from "../bridges/edits";
import type { Logger } from "../protocol/log";
import { CHAT_VIEW_ID } from "../ui/chatView";
import type { DiffContentProvider } from "../ui/diff";
import { VsCodeEditTarget } from "../ui/editReview";
import { mentionCompletions, selectionAttachment } from "../ui/promptInput";
import type { HostToWebview, WebviewToHost } from "../webview/messages";
import type { AgentLifecycle } from "./lifecycle";
import type { SessionController } from "./sessionController";

export interface RouterParts {
  agent: AgentLifecycle;
  sessions: SessionController;
  /** To the chat view. */
  post(m: HostToWebview): void;
  diffs: DiffContentProvider;
  edits: EditReview;
  log: Logger;
}

export class WebviewRouter {
  constructor(private readonly p: RouterParts) {}

  onMessage(m: WebviewToHost): void {
    const { agent, sessions } = this.p;
    switch (m.type) {
      case "ready": {
        agent.showState();
        // The view starts over from the whole conversation (its pending changes are in it).
        sessions.showAll();
        if (agent.idle) void sessions.ensureSession().catch(() => undefined);
        break;
      }
      case "prompt": {
        let atts: ViewAttachment[] = [];
        try {
          atts = (Array.isArray(m.attachments) ? m.attachments : []).map(validAttachment);
        } catch (e) {
          this.p.log.warn(`prompt from the view: ${(e as Error).message}`);
        }
        if (typeof m.text === "string" && (m.text.trim() || atts.length)) void sessions.prompt(m.text.trim(), atts);
        break;
      }
      case "complete":
        if (typeof m.query === "string" && typeof m.id === "number")
          void mentionCompletions(m.query.slice(0, 200)).then((items) => this.p.post({ type: "completions", id: m.id, items }));
        break;
      case "attachSelection":
        this.attachSelection();
        break;
      case "editAction":
        if (typeof m.path === "string" && ["keep", "undo", "diff"].includes(m.action))
          void this.editAction(m.action, m.path).catch((e: Error) => void vscode.window.showErrorMessage(`ACP: ${e.message}`));
        break;
      case "cancel":
        sessions.cancel();
        break;
      case "newSession":
        void sessions.newSession().catch((e: Error) => sessions.conversation().notice("error", e.message));
        break;
      case "setMode":
        if (typeof m.modeId === "string") sessions.setMode(m.modeId);
        break;
      case "setConfig":
        if (typeof m.configId === "string") sessions.setConfig(m.configId, m.value);
        break;
      case "openDiff": {
        const entry = typeof m.entry === "number" ? sessions.shown?.entry(m.entry) : undefined;
        const c = entry?.type === "tool" ? entry.content[m.index] : undefined;
        if (c?.type === "diff") void this.p.diffs.open(c.path, c.oldText, c.newText);
        break;
      }
    }
  }

  /** The editor's selection attached to the prompt (the chat focused), or why not. */
  attachSelection(): void {
    const a = selectionAttachment();
    if (typeof a === "string") void vscode.window.showInformationMessage(`ACP: ${a}`);
    else {
      this.p.post({ type: "attach", attachment: a });
      void vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
    }
  }

  /** Keep, Undo or Diff of one file the agent wrote. */
  private async editAction(action: "keep" | "undo" | "diff", file: string): Promise<void> {
    const { edits } = this.p;
    const f = edits.list().find((e) => e.path === file);
    if (!f) return;
    if (action === "keep") edits.keep(file);
    else if (action === "diff") await this.p.diffs.open(file, f.before, f.after, "agent's edit");
    else {
      const target = new VsCodeEditTarget();
      let r = await edits.undo(file, target);
      if (!r.undone && r.reason === "changed_since") {
        const pick = await vscode.window.showWarningMessage(
          `${path.basename(file)} changed after the agent's edit. Undo anyway (your later changes are lost)?`,
          { modal: true },
          "Undo anyway",
        );
        if (pick === "Undo anyway") r = await edits.undo(file, target, true);
      }
      if (r.undone) this.p.log.info(`undid the agent's edit of ${file}${r.deleted ? " (the file it created was deleted)" : ""}`);
    }
    this.p.sessions.postEdits();
  }
}
