// The wasm engine in the browser: acp-wasm's client build for `--target web` (an ES module,
// bundled into dist/extension.browser.js), instantiated from the .wasm the extension ships
// (dist/acp-wasm-web/acp_wasm_bg.wasm), read through VS Code's file system from the extension's
// own URI (a `vscode-remote:`/`https:` resource in the web worker host: no `fs`, no
// `require`). Instantiation is asynchronous, so the browser entry point awaits `loadWebEngine`
// before anything asks for the engine.

import * as vscode from "vscode";
import init, * as web from "acp-wasm-web";
import { adoptEngine, EngineNotFoundError, type EngineModule } from "../protocol/engine";

/** Where the .wasm is, inside the extension. */
export const WEB_WASM_PATH = ["dist", "acp-wasm-web", "acp_wasm_bg.wasm"] as const;

/** Reads and instantiates the web build's .wasm; resolves to the engine and where it came from. */
export async function loadWebEngine(extensionUri: vscode.Uri): Promise<{ module: EngineModule; from: string }> {
  const uri = vscode.Uri.joinPath(extensionUri, ...WEB_WASM_PATH);
  let bytes: Uint8Array;
  try {
    bytes = await vscode.workspace.fs.readFile(uri);
  } catch (e) {
    throw new EngineNotFoundError(
      `cannot read the wasm engine at ${uri.toString(true)}: ${(e as Error).message} (the package lacks dist/acp-wasm-web: build it with scripts/build-wasm.sh, then npm run build)`,
    );
  }
  await init({ module_or_path: bytes });
  return { module: adoptEngine(web as unknown as EngineModule, uri.toString(true)), from: uri.toString(true) };
}
