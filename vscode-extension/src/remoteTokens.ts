// The tokens of remote agents (acp serve --http prints one at start, or reads it from
// --token-file): asked once with a password box, kept in VS Code's SecretStorage keyed by the
// URL's origin (scheme, host, port), sent only to that origin, never logged.

import * as vscode from "vscode";
import { tokenKey } from "./protocol/remoteUrl";

const PREFIX = "acp.remoteToken:";

export class RemoteTokens {
  constructor(private readonly secrets: vscode.SecretStorage) {}

  private key(url: string): string {
    return PREFIX + tokenKey(url);
  }

  /** The kept token for the URL's origin, else asked for (undefined: the user cancelled).
   *  An empty answer means "this server takes no token". */
  async token(url: string, why?: string): Promise<string | undefined> {
    const kept = await this.secrets.get(this.key(url));
    if (kept !== undefined) return kept;
    return this.ask(url, why);
  }

  /** Asks for the token (password box) and keeps it. */
  async ask(url: string, why?: string): Promise<string | undefined> {
    const origin = tokenKey(url);
    const value = await vscode.window.showInputBox({
      title: `ACP: token for ${origin}`,
      prompt: `${why ? `${why} ` : ""}The token of the remote agent at ${url} (acp serve prints it at start, or reads it from --token-file). Kept in VS Code's secret storage for ${origin}; leave empty for a server without a token.`,
      password: true,
      ignoreFocusOut: true,
      placeHolder: "token",
      validateInput: (v) => ([...v].some((c) => c <= " " || c === "\x7f") ? "a token has no spaces or control characters" : undefined),
    });
    if (value === undefined) return undefined;
    await this.secrets.store(this.key(url), value);
    return value;
  }

  async forget(url: string): Promise<void> {
    await this.secrets.delete(this.key(url));
  }
}
