// The VS Code face of permission prompts: a modal warning dialog whose buttons are the agent's
// options, or a modal (ignoreFocusOut) QuickPick when there are more options than fit; the
// terminal/create question (acp-client's text) and the sensitive-write question (acp-client's
// question: the real path, why, the diff; Review changes / Allow write / Refuse).

import * as vscode from "vscode";
import { questionDetail, type PermissionPromptModel, type PermissionPrompter } from "../bridges/permission";
import type { CancellationToken } from "../protocol/cancellation";
import type { TerminalApprovalRequest, TerminalApprover } from "../bridges/terminal";
import type { SensitiveWrite, WriteApprover, WriteDecision } from "../bridges/fs";
import type { DiffContentProvider } from "./diff";

interface OptionItem extends vscode.MessageItem {
  optionId: string;
}

/** The extra choice offered before answering a question about edits. */
export const REVIEW_CHOICE = "Review changes";

export class VsCodePermissionPrompter implements PermissionPrompter {
  constructor(private readonly diffs?: DiffContentProvider) {}

  async prompt(model: PermissionPromptModel, token: CancellationToken): Promise<string | undefined> {
    if (model.useQuickPick) return this.quickPick(model, token);
    const items: OptionItem[] = model.items.map((i) => ({
      title: i.label,
      optionId: i.optionId,
      isCloseAffordance: i.isCloseAffordance,
    }));
    // An edit: "Review changes" first opens the diffs, then the same question is asked again
    // as a notification, so the diff editor stays readable and clickable while deciding.
    const review: OptionItem = { title: REVIEW_CHOICE, optionId: "" };
    if (this.diffs && model.diffs.length > 0 && !token.isCancellationRequested) {
      const withdrawn = token.onCancellationRequested(() => {
        void vscode.window.showInformationMessage("ACP: the permission request was withdrawn (cancelled); your answer will be ignored.");
      });
      let picked: OptionItem | undefined;
      try {
        picked = await vscode.window.showWarningMessage(model.message, { modal: true, detail: model.detail }, review, ...items);
      } finally {
        withdrawn.dispose();
      }
      if (picked !== review) return picked?.optionId;
      for (const d of model.diffs) await this.diffs.open(d.path, d.oldText, d.newText, "agent's proposed change: review before answering");
      if (token.isCancellationRequested) return undefined;
      const again = await Promise.race([
        vscode.window.showWarningMessage(`${model.message} (after review)`, ...items),
        new Promise<undefined>((r) => token.onCancellationRequested(() => r(undefined))),
      ]);
      return again?.optionId;
    }
    // A modal message cannot be closed programmatically: if the request is withdrawn while it is
    // open, say so; the bridge has already answered `cancelled` and ignores the late click.
    const sub = token.onCancellationRequested(() => {
      void vscode.window.showInformationMessage("ACP: the permission request was withdrawn (cancelled); your answer will be ignored.");
    });
    try {
      const picked = await vscode.window.showWarningMessage(model.message, { modal: true, detail: model.detail }, ...items);
      return picked?.optionId;
    } finally {
      sub.dispose();
    }
  }

  private quickPick(model: PermissionPromptModel, token: CancellationToken): Promise<string | undefined> {
    return new Promise((resolve) => {
      const qp = vscode.window.createQuickPick<vscode.QuickPickItem & { optionId: string }>();
      qp.title = model.message;
      qp.placeholder = model.detail.split("\n")[0] || "Choose how to answer the agent";
      qp.ignoreFocusOut = true;
      qp.items = model.items.map((i) => ({ label: i.label, description: i.kind.replace("_", " "), optionId: i.optionId }));
      let done = false;
      const finish = (id: string | undefined) => {
        if (done) return;
        done = true;
        resolve(id);
        qp.dispose();
        sub.dispose();
      };
      const sub = token.onCancellationRequested(() => finish(undefined));
      qp.onDidAccept(() => finish(qp.selectedItems[0]?.optionId));
      qp.onDidHide(() => finish(undefined));
      qp.show();
    });
  }
}

/** The lines of the terminal question's modal, from acp-client's question (every
 *  agent-supplied field is already escaped and on one line there). */
export function terminalQuestionDetail(r: TerminalApprovalRequest): string {
  const q = r.question;
  const lines = [
    q.title,
    "",
    `Command (${r.shell ? "run by /bin/sh -c" : "run without a shell"}): ${q.commandLine}`,
    `Directory: ${q.cwd ?? `${r.directory ?? "(the editor's)"} (the default)`}`,
  ];
  if (q.env.length) {
    lines.push(`Environment set by the agent (values in the first line): ${q.env.map((e) => `${e.name} (${e.change})`).join(", ")}`);
  }
  for (const w of q.warnings) lines.push(`Warning: ${w}`);
  return lines.join("\n");
}

/** The VS Code face of terminal permission decisions: a modal with acp-client's question. */
export class VsCodeTerminalApprover implements TerminalApprover {
  async approve(r: TerminalApprovalRequest, token: CancellationToken): Promise<boolean> {
    const sub = token.onCancellationRequested(() => {
      void vscode.window.showInformationMessage("ACP: the agent withdrew its command; your answer will be ignored.");
    });
    try {
      const picked = await vscode.window.showWarningMessage(
        "The agent wants to run a command",
        { modal: true, detail: terminalQuestionDetail(r) },
        "Run",
      );
      return picked === "Run" && !token.isCancellationRequested;
    } finally {
      sub.dispose();
    }
  }
}

interface WriteItem extends vscode.MessageItem {
  decision: WriteDecision;
}

/** The lines of the sensitive-write modal: acp-client's question about the write (the real
 *  path and why, the path the agent asked for, the diff). */
export function writeQuestionDetail(w: SensitiveWrite): string {
  return [w.question.title, "", questionDetail(w.question, " (Review changes shows the whole change)")].join("\n");
}

/** The VS Code face of sensitive writes: a modal (Review changes / Allow write / Refuse; Escape
 *  refuses) and VS Code's diff editor for the review. */
export class VsCodeWriteApprover implements WriteApprover {
  constructor(private readonly diffs: DiffContentProvider) {}

  async ask(w: SensitiveWrite, token: CancellationToken): Promise<WriteDecision> {
    const sub = token.onCancellationRequested(() => {
      void vscode.window.showInformationMessage("ACP: the agent withdrew its write; your answer will be ignored.");
    });
    try {
      const items: WriteItem[] = [
        { title: "Review changes", decision: "review" },
        { title: "Allow write", decision: "allow" },
        { title: "Refuse", decision: "refuse", isCloseAffordance: true },
      ];
      const picked = await vscode.window.showWarningMessage(
        "The agent wants to write a file that can change what runs",
        { modal: true, detail: writeQuestionDetail(w) },
        ...items,
      );
      return picked?.decision ?? "refuse";
    } finally {
      sub.dispose();
    }
  }

  async review(w: SensitiveWrite): Promise<void> {
    await this.diffs.open(w.realPath, w.oldText, w.newText, "agent's write: review before allowing");
  }
}
