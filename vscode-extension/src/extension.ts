// The extension's entry point on Node (package.json "main": VS Code desktop, code-server's and
// Remote's server-side extension host), with the Node Platform (platform/node.ts).
// extension.browser.ts is the browser's.

import type * as vscode from "vscode";
import { AcpContext } from "./context";
import { nodePlatform } from "./platform/node";

let ctx: AcpContext | undefined;

export function activate(context: vscode.ExtensionContext): { context: AcpContext } {
  ctx = new AcpContext(context, nodePlatform);
  return { context: ctx };
}

export async function deactivate(): Promise<void> {
  const c = ctx;
  ctx = undefined;
  await c?.dispose();
}
