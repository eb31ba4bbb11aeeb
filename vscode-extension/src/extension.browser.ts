// The extension's entry point in the browser (package.json "browser": VS Code for the Web,
// vscode.dev, github.dev, code-server's web worker extension host). Loads the web build of the
// wasm engine from the extension's own files, then runs the same AcpContext as on Node with the
// browser's Platform: remote agents only (platform/browser.ts).

import * as vscode from "vscode";
import { AcpContext } from "./context";
import { browserPlatform } from "./platform/browser";
import { browserBridgeFiles } from "./platform/browserBridgeFiles";
import { loadWebEngine } from "./platform/browserEngine";

let ctx: AcpContext | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<{ context: AcpContext }> {
  const engine = await loadWebEngine(context.extensionUri).catch((e: Error) => e);
  ctx = new AcpContext(
    context,
    browserPlatform(
      engine,
      (e) => ctx?.log.warn(`saving the conversation in the workspace state failed: ${String(e)}`),
      browserBridgeFiles(vscode.workspace.fs, () => (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri)),
    ),
  );
  return { context: ctx };
}

export async function deactivate(): Promise<void> {
  const c = ctx;
  ctx = undefined;
  await c?.dispose();
}
