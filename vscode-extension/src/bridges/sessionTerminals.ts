// How the agent's commands are shown: one terminal panel per ACP session (not one per command).
// Each `terminal/create` the user allowed prints a header line with its command line as
// acp-client quoted it (ClientPolicy.terminalQuestion: one line, agent text escaped), then its
// output, then how it ended; the session's later commands follow in the same panel. A panel the
// user closed is opened again (under the same name) for the session's next command; the panel
// goes when the session ends or the agent stops. Output of commands running side by side is
// marked when the panel switches from one to the other; what the user types goes to the
// session's latest command still running.
//
// This is display only: each terminal keeps its own id, output buffer, exit status, kill and
// release in TerminalManager (bridges/terminal.ts), exactly as ACP has them.
//
// Architecture Invariant: this file does not import `vscode` (the panel is a TerminalPanelHost;
// a Pseudoterminal in VS Code, ui/terminalDisplay.ts).

import type { TerminalExitStatus } from "@agentclientprotocol/sdk";
import type { TerminalDisplay, TerminalDisplayFactory } from "./terminal";

/** One terminal panel (a tab in the editor's terminal panel). */
export interface TerminalPanel {
  /** Shows `text` (lines end in `\n`; the panel converts them for its terminal). */
  write(text: string): void;
  /** Brings the panel to view without taking the focus (a new command started in it). */
  reveal(): void;
  dispose(): void;
}

export interface TerminalPanelHost {
  /** Opens a panel named `name`. `onInput` gets what the user types in it; `onClosed` is called
   *  once if the user closes it (not after `dispose`). */
  open(name: string, onInput: (data: string) => void, onClosed: () => void): TerminalPanel;
}

/** What a panel shows around a command's output (ANSI bold and dim). */
export const shownLines = {
  header: (commandLine: string) => `\x1b[1m$ ${commandLine}\x1b[0m\n`,
  more: (commandLine: string) => `\x1b[2m[output of $ ${commandLine}]\x1b[0m\n`,
  exit: (s: TerminalExitStatus) =>
    `\x1b[2m[process ${s.signal ? `killed by ${s.signal}` : `exited with code ${s.exitCode ?? "unknown"}`}]\x1b[0m\n`,
};

interface Command {
  commandLine: string;
  onInput: (data: string) => void;
}

interface SessionState {
  sessionId: string;
  /** The open panel; undefined once the user closed it. */
  panel: TerminalPanel | undefined;
  /** The session's commands still running, oldest first. */
  running: Command[];
  /** The command whose output the panel showed last (a header when another one writes). */
  lastWriter: Command | undefined;
  /** The panel's last text ended a line. */
  atLineStart: boolean;
  ended: boolean;
}

export class SessionTerminals implements TerminalDisplayFactory {
  private readonly sessions = new Map<string, SessionState>();

  /** `name`: the panel's name for a session (asked each time a panel opens). */
  constructor(
    private readonly host: TerminalPanelHost,
    private readonly name: (sessionId: string) => string,
  ) {}

  /** Sessions with a panel open (for tests and the log). */
  get openPanels(): number {
    let n = 0;
    for (const s of this.sessions.values()) if (s.panel) n++;
    return n;
  }

  create(sessionId: string, commandLine: string, onInput: (data: string) => void): TerminalDisplay {
    let state = this.sessions.get(sessionId);
    if (!state) {
      state = { sessionId, panel: undefined, running: [], lastWriter: undefined, atLineStart: true, ended: false };
      this.sessions.set(sessionId, state);
    }
    const s = state;
    const cmd: Command = { commandLine, onInput };
    s.running.push(cmd);
    const panel = this.panelOf(s);
    panel.reveal();
    this.show(s, shownLines.header(commandLine), true);
    s.lastWriter = cmd;
    return {
      write: (text) => {
        if (text === "" || s.ended || !s.panel) return;
        if (s.lastWriter !== cmd) {
          this.show(s, shownLines.more(cmd.commandLine), true);
          s.lastWriter = cmd;
        }
        this.show(s, text, false);
      },
      exited: (status) => {
        const i = s.running.indexOf(cmd);
        if (i >= 0) s.running.splice(i, 1);
        if (s.ended || !s.panel) return;
        if (s.lastWriter !== cmd) this.show(s, shownLines.more(cmd.commandLine), true);
        this.show(s, shownLines.exit(status), true);
        s.lastWriter = undefined;
      },
    };
  }

  /** The session is over: its panel goes (its terminals stay as ACP has them). */
  endSession(sessionId: string): void {
    const s = this.sessions.get(sessionId);
    if (!s) return;
    this.sessions.delete(sessionId);
    s.ended = true;
    const panel = s.panel;
    s.panel = undefined;
    panel?.dispose();
  }

  /** Every session's panel goes (the agent stopped, the extension is deactivating). */
  disposeAll(): void {
    for (const id of [...this.sessions.keys()]) this.endSession(id);
  }

  /** The session's panel, opened (again) if there is none. */
  private panelOf(s: SessionState): TerminalPanel {
    if (s.panel) return s.panel;
    const panel: TerminalPanel = this.host.open(
      this.name(s.sessionId),
      (data) => s.running[s.running.length - 1]?.onInput(data),
      () => {
        if (s.panel !== panel) return;
        s.panel = undefined;
        s.lastWriter = undefined;
        s.atLineStart = true;
      },
    );
    s.panel = panel;
    s.atLineStart = true;
    return panel;
  }

  /** Writes to the session's panel; `line`: what is written starts a line of its own. */
  private show(s: SessionState, text: string, line: boolean): void {
    if (!s.panel) return;
    if (line && !s.atLineStart) s.panel.write("\n");
    s.panel.write(text);
    s.atLineStart = text.endsWith("\n");
  }
}

/** A session's panel name: "ACP: <agent> — <title or the session id's start>". */
export function sessionTerminalName(agent: string | undefined, title: string | undefined, sessionId: string): string {
  // One line, no control characters (the agent's and the user's text), clipped.
  // eslint-disable-next-line no-control-regex
  const line = (t: string) => t.replace(/[\u0000-\u001f\u007f-\u009f\s]+/g, " ").trim();
  const clip = (t: string, n: number) => (t.length > n ? `${t.slice(0, n - 1)}…` : t);
  const what = title && line(title) ? clip(line(title), 40) : clip(line(sessionId), 12);
  return `ACP: ${agent && line(agent) ? `${clip(line(agent), 30)} — ` : ""}${what}`;
}
