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
    // The safe choice (the one a dismissal answers: a refusal) first, where keyboard focus
    // starts. VS Code's modal focuses its first button that is not the close affordance (which
    // it moves to the end), so the refusal is an ordinary first button, and a dismissal (Escape,
    // or the Cancel button VS Code then adds) answers it too.
    const safe = model.items.find((i) => i.isCloseAffordance);
    const items: OptionItem[] = [...(safe ? [safe] : []), ...model.items.filter((i) => i !== safe)].map((i) => ({
      title: i.label,
      optionId: i.optionId,
    }));
    // An edit: "Review changes" opens the diffs, then the same modal is asked again (the diff
    // tabs stay open behind it, and close once the question is answered).
    const review: OptionItem = { title: REVIEW_CHOICE, optionId: "" };
    const canReview = !!this.diffs && model.diffs.length > 0;
    // A modal message cannot be closed programmatically: if the request is withdrawn while it is
    // open, say so; the bridge has already answered `cancelled` and ignores the late click.
    const withdrawn = token.onCancellationRequested(() => {
      void vscode.window.showInformationMessage("ACP: the permission request was withdrawn (cancelled); your answer will be ignored.");
    });
    const opened: number[] = [];
    try {
      for (let reviewed = false; !token.isCancellationRequested; ) {
        const message = reviewed ? `${model.message} (the change is open in the diff editor)` : model.message;
        const buttons = canReview ? [...items, review] : items;
        const picked = await vscode.window.showWarningMessage(message, { modal: true, detail: model.detail }, ...buttons);
        if (picked === undefined) return safe?.optionId;
        if (picked !== review || !this.diffs) return picked.optionId;
        for (const d of model.diffs)
          opened.push(await this.diffs.open(d.path, d.oldText, d.newText, "agent's proposed change: review before answering"));
        reviewed = true;
      }
      return undefined;
    } finally {
      withdrawn.dispose();
      if (opened.length && this.diffs) void this.diffs.closeTabs(opened);
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

/** The terminal question's message: the command, once (acp-client's title: `run \`…\``, with
 *  its directory and environment when the agent set them). */
export function terminalQuestionMessage(r: TerminalApprovalRequest): string {
  return `The agent wants to ${r.question.title}`;
}

/** The lines of the terminal question's modal, from acp-client's question (every
 *  agent-supplied field is already escaped and on one line there). */
export function terminalQuestionDetail(r: TerminalApprovalRequest): string {
  const q = r.question;
  const lines = [
    `${r.shell ? "Run by /bin/sh -c" : "Run without a shell"}.`,
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
      // "Refuse" first: VS Code's modal focuses its first button (Cancel and Escape refuse too).
      const picked = await vscode.window.showWarningMessage(
        terminalQuestionMessage(r),
        { modal: true, detail: terminalQuestionDetail(r) },
        "Refuse",
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
