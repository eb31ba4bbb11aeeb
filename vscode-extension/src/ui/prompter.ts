// The VS Code face of permission prompts: a modal warning dialog whose buttons are the agent's
// options, or a modal (ignoreFocusOut) QuickPick when there are more options than fit.

import * as vscode from "vscode";
import type { PermissionPromptModel, PermissionPrompter } from "../bridges/permission";
import type { CancellationToken } from "../protocol/cancellation";
import type { TerminalApprovalRequest, TerminalApprover } from "../bridges/terminal";

interface OptionItem extends vscode.MessageItem {
  optionId: string;
}

export class VsCodePermissionPrompter implements PermissionPrompter {
  async prompt(model: PermissionPromptModel, token: CancellationToken): Promise<string | undefined> {
    if (model.useQuickPick) return this.quickPick(model, token);
    const items: OptionItem[] = model.items.map((i) => ({
      title: i.label,
      optionId: i.optionId,
      isCloseAffordance: i.isCloseAffordance,
    }));
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

/** The VS Code face of terminal permission decisions: a modal naming the exact command. */
export class VsCodeTerminalApprover implements TerminalApprover {
  async approve(r: TerminalApprovalRequest, token: CancellationToken): Promise<boolean> {
    const sub = token.onCancellationRequested(() => {
      void vscode.window.showInformationMessage("ACP: the agent withdrew its command; your answer will be ignored.");
    });
    try {
      const detail = [
        `Command (run without a shell): ${r.commandLine}`,
        `Directory: ${r.cwd ?? "(the agent's default)"}`,
        ...(r.envNames.length ? [`Extra environment variables: ${r.envNames.join(", ")}`] : []),
      ].join("\n");
      const picked = await vscode.window.showWarningMessage("The agent wants to run a command", { modal: true, detail }, "Run");
      return picked === "Run" && !token.isCancellationRequested;
    } finally {
      sub.dispose();
    }
  }
}
