// Webview routing: each message of the chat view (webview/messages.ts's WebviewToHost) checked
// (it comes from the webview, so every field is checked before use) and handed to the part that
// acts on it: the session controller (prompt, cancel, new session, mode, option), the agent's
// lifecycle (the view loaded and nothing runs: start), the edit review (Keep, Undo, Diff) and
// the diff view; and the editor's selection attached to the prompt.
// One reason to change: a message between the chat view and the host is added or changed.

import { hostPaths } from "../platform/hostPaths";
import * as vscode from "vscode";
import { validAttachment, type ViewAttachment } from "../bridges/attachments";
import type { EditReview, Hunker } from "../bridges/edits";
import type { Logger } from "../protocol/log";
import { CHAT_VIEW_ID } from "../ui/chatView";
import type { DiffContentProvider } from "../ui/diff";
import { VsCodeEditTarget, VsCodePendingFace } from "../ui/editReview";
import { mentionCompletions, selectionAttachment } from "../ui/promptInput";
import { validQueueAction } from "../sessions/promptQueue";
import type { HostToWebview, WebviewToHost } from "../webview/messages";
import { copyCode, insertCode } from "./codeActions";
import type { AgentLifecycle } from "./lifecycle";
import { settlePendingReview } from "./pendingReview";
import type { SessionController } from "./sessionController";

export interface RouterParts {
  agent: AgentLifecycle;
  sessions: SessionController;
  /** To the chat view. */
  post(m: HostToWebview): void;
  diffs: DiffContentProvider;
  edits: EditReview;
  /** acp-client's hunks (the client policy). */
  hunker: Hunker;
  log: Logger;
}

type HunkShape = { oldStart: number; removed: number; newStart: number; added: number };

function validHunk(h: unknown): h is HunkShape {
  if (typeof h !== "object" || h === null) return false;
  const o = h as Record<string, unknown>;
  return ["oldStart", "removed", "newStart", "added"].every((k) => Number.isSafeInteger(o[k]));
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
      case "queue": {
        const a = validQueueAction(m);
        if (a) sessions.queueAction(a);
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
          void this.editAction(m.action as "keep" | "undo" | "diff", m.path).catch(
            (e: Error) => void vscode.window.showErrorMessage(`ACP: ${e.message}`),
          );
        else if (
          typeof m.path === "string" &&
          (m.action === "acceptHunk" || m.action === "rejectHunk") &&
          Number.isSafeInteger(m.hunk) &&
          validHunk(m.expect)
        )
          void this.hunkAction(m.action, m.path, m.hunk!, m.expect).catch(
            (e: Error) => void vscode.window.showErrorMessage(`ACP: ${e.message}`),
          );
        break;
      case "restoreCheckpoint":
        if (Number.isSafeInteger(m.turn))
          void this.restoreCheckpoint(m.turn).catch((e: Error) => void vscode.window.showErrorMessage(`ACP: ${e.message}`));
        break;
      case "openFile":
        if (typeof m.path === "string" && hostPaths().isAbsolute(m.path)) {
          const line = Number.isSafeInteger(m.line) && m.line! > 0 ? m.line! - 1 : 0;
          void vscode.window
            .showTextDocument(vscode.Uri.file(m.path), { preview: true, selection: new vscode.Range(line, 0, line, 0) })
            .then(undefined, (e: Error) => void vscode.window.showErrorMessage(`ACP: cannot open ${m.path}: ${e.message}`));
        }
        break;
      case "cancel":
        sessions.cancel();
        break;
      case "newSession":
        void this.settlePending()
          .then((go) => (go ? sessions.newSession() : undefined))
          .catch((e: Error) => sessions.conversation().notice("error", e.message));
        break;
      case "setMode":
        if (typeof m.modeId === "string") sessions.setMode(m.modeId);
        break;
      case "setConfig":
        if (typeof m.configId === "string") sessions.setConfig(m.configId, m.value);
        break;
      case "copyCode":
        void copyCode(m.text);
        break;
      case "insertCode":
        void insertCode(m.text);
        break;
      case "openDiff": {
        const entry = typeof m.entry === "number" ? sessions.shown?.entry(m.entry) : undefined;
        const c = entry?.type === "tool" ? entry.content[m.index] : undefined;
        if (c?.type === "diff") void this.p.diffs.open(c.path, c.oldText, c.newText);
        break;
      }
      case "diffCounts": {
        const entry = typeof m.entry === "number" ? sessions.shown?.entry(m.entry) : undefined;
        const c = entry?.type === "tool" && typeof m.index === "number" ? entry.content[m.index] : undefined;
        if (c?.type !== "diff") break;
        const hunks = this.p.hunker.editHunks(c.oldText ?? "", c.newText);
        const added = hunks.reduce((n, h) => n + h.added, 0);
        const removed = hunks.reduce((n, h) => n + h.removed, 0);
        this.p.post({ type: "diffCounts", entry: m.entry as number, index: m.index as number, added, removed });
        break;
      }
    }
  }

  /** The keyboard to the chat's prompt (the view itself is focused by its `.focus` command). */
  focusPrompt(): void {
    this.p.post({ type: "focusPrompt" });
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

  /** Before another conversation is shown: the pending review is kept, undone, or the change
   *  cancelled (false). */
  settlePending(): Promise<boolean> {
    return settlePendingReview(this.p.edits, new VsCodeEditTarget(), new VsCodePendingFace(), (p) => hostPaths().basename(p)).finally(() =>
      this.p.sessions.postEdits(),
    );
  }

  /** Accept or Reject of one change the agent made. */
  async hunkAction(action: "acceptHunk" | "rejectHunk", file: string, index: number, expect: HunkShape): Promise<void> {
    const { edits, hunker } = this.p;
    if (action === "acceptHunk") {
      const r = edits.acceptHunk(file, index, expect, hunker);
      if (!r.done && r.reason === "stale")
        void vscode.window.showInformationMessage("ACP: that change is no longer there (the list was refreshed).");
    } else {
      const target = new VsCodeEditTarget();
      let r = await edits.rejectHunk(file, index, expect, hunker, target);
      if (!r.done && r.reason === "changed_since") {
        const pick = await vscode.window.showWarningMessage(
          `${hostPaths().basename(file)} changed after the agent's edit. Reject the change anyway (the file is rewritten from the agent's text without it: your later changes are lost)?`,
          { modal: true },
          "Reject anyway",
        );
        if (pick === "Reject anyway") r = await edits.rejectHunk(file, index, expect, hunker, target, true);
      }
      if (!r.done && r.reason === "stale")
        void vscode.window.showInformationMessage("ACP: that change is no longer there (the list was refreshed).");
      if (r.done) this.p.log.info(`rejected change ${index + 1} of the agent's edit of ${file}`);
    }
    this.p.sessions.postEdits();
    this.p.diffs.refreshReview(file);
  }

  /** Restores the files the agent wrote to their state before turn `turn`, after asking. */
  async restoreCheckpoint(turn: number): Promise<void> {
    const { edits } = this.p;
    const cp = edits.restorable().find((c) => c.turn === turn);
    if (!cp) {
      void vscode.window.showWarningMessage("ACP: that checkpoint is no longer kept.");
      return;
    }
    const go = await vscode.window.showWarningMessage(
      `Restore ${cp.files} file${cp.files === 1 ? "" : "s"} the agent wrote to their state before "${cp.label}"?`,
      { modal: true, detail: "Files the agent created since are deleted. The conversation is not changed." },
      "Restore",
    );
    if (go !== "Restore") return;
    const target = new VsCodeEditTarget();
    let r = await edits.restoreTo(turn, target);
    if (!r.restored && r.reason === "changed_since") {
      const pick = await vscode.window.showWarningMessage(
        `Changed since the agent's last write: ${r.files.map((f) => hostPaths().basename(f)).join(", ")}. Restore anyway (those changes are lost)?`,
        { modal: true },
        "Restore anyway",
      );
      if (pick === "Restore anyway") r = await edits.restoreTo(turn, target, true);
    }
    if (!r.restored && r.reason === "forgotten")
      void vscode.window.showWarningMessage("ACP: that checkpoint was dropped to stay within memory; it cannot be restored.");
    if (r.restored) this.p.log.info(`restored ${r.files.length} file(s) to before turn ${turn}`);
    this.p.sessions.postEdits();
  }

  /** Keep, Undo or Diff of one file the agent wrote. */
  private async editAction(action: "keep" | "undo" | "diff", file: string): Promise<void> {
    const { edits } = this.p;
    const f = edits.list().find((e) => e.path === file);
    if (!f) return;
    if (action === "keep") edits.keep(file);
    else if (action === "diff") await this.p.diffs.openReview(file, f.before, f.after);
    else {
      const target = new VsCodeEditTarget();
      let r = await edits.undo(file, target);
      if (!r.undone && r.reason === "changed_since") {
        const pick = await vscode.window.showWarningMessage(
          `${hostPaths().basename(file)} changed after the agent's edit. Undo anyway (your later changes are lost)?`,
          { modal: true },
          "Undo anyway",
        );
        if (pick === "Undo anyway") r = await edits.undo(file, target, true);
      }
      if (r.undone) this.p.log.info(`undid the agent's edit of ${file}${r.deleted ? " (the file it created was deleted)" : ""}`);
    }
    this.p.sessions.postEdits();
    this.p.diffs.refreshReview(file);
  }
}
