// TerminalDisplay as a VS Code Pseudoterminal: agent terminals appear in the terminal panel.

import * as vscode from "vscode";
import type { TerminalDisplay, TerminalDisplayFactory } from "../bridges/terminal";
import type { TerminalExitStatus } from "@agentclientprotocol/sdk";

export class PseudoterminalFactory implements TerminalDisplayFactory {
  create(title: string, onInput: (data: string) => void): TerminalDisplay {
    const writeEmitter = new vscode.EventEmitter<string>();
    let opened = false;
    const early: string[] = []; // output before the panel opened the pty
    const emit = (text: string) => {
      const t = text.replace(/\r?\n/g, "\r\n");
      if (opened) writeEmitter.fire(t);
      else early.push(t);
    };
    const pty: vscode.Pseudoterminal = {
      onDidWrite: writeEmitter.event,
      open: () => {
        opened = true;
        for (const t of early.splice(0)) writeEmitter.fire(t);
      },
      close: () => {},
      handleInput: (data) => onInput(data === "\r" ? "\n" : data),
    };
    const terminal = vscode.window.createTerminal({ name: title, pty, isTransient: true });
    terminal.show(true);
    return {
      write: emit,
      exited: (s: TerminalExitStatus) => emit(`\n[process ${s.signal ? `killed by ${s.signal}` : `exited with code ${s.exitCode}`}]\n`),
      dispose: () => {
        terminal.dispose();
        writeEmitter.dispose();
      },
    };
  }
}
