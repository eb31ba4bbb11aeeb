import type * as vscode from "vscode";
import { AcpContext } from "./context";

let ctx: AcpContext | undefined;

export function activate(context: vscode.ExtensionContext): { context: AcpContext } {
  ctx = new AcpContext(context);
  return { context: ctx };
}

export async function deactivate(): Promise<void> {
  const c = ctx;
  ctx = undefined;
  await c?.dispose();
}
