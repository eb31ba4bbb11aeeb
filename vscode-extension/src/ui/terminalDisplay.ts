// The session terminal panels (bridges/sessionTerminals.ts) as VS Code Pseudoterminals: one tab
// per ACP session in the terminal panel.

import * as vscode from "vscode";
import type { TerminalPanel, TerminalPanelHost } from "../bridges/sessionTerminals";

/** Text kept for a panel VS Code has not opened yet (the oldest goes first past this). */
const EARLY_LIMIT = 1024 * 1024;

export class PseudoterminalPanels implements TerminalPanelHost {
  open(name: string, onInput: (data: string) => void, onClosed: () => void): TerminalPanel {
    const writeEmitter = new vscode.EventEmitter<string>();
    let opened = false;
    let gone = false;
    const early: string[] = []; // output before the panel opened the pty
    let earlySize = 0;
    const emit = (text: string) => {
      if (gone) return;
      const t = text.replace(/\r?\n/g, "\r\n");
      if (opened) return writeEmitter.fire(t);
      early.push(t);
      earlySize += t.length;
      while (earlySize > EARLY_LIMIT && early.length > 1) earlySize -= early.shift()!.length;
    };
    const pty: vscode.Pseudoterminal = {
      onDidWrite: writeEmitter.event,
      open: () => {
        opened = true;
        for (const t of early.splice(0)) writeEmitter.fire(t);
      },
      // The user closed the tab (or the window is closing).
      close: () => {
        if (gone) return;
        gone = true;
        writeEmitter.dispose();
        onClosed();
      },
      handleInput: (data) => onInput(data === "\r" ? "\n" : data),
    };
    const terminal = vscode.window.createTerminal({ name, pty, isTransient: true });
    return {
      write: emit,
      reveal: () => {
        if (!gone) terminal.show(true);
      },
      dispose: () => {
        if (gone) return;
        gone = true;
        terminal.dispose();
        writeEmitter.dispose();
      },
    };
  }
}
