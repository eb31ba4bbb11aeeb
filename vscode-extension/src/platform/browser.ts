// The Platform in the browser (VS Code for the Web's web worker extension host): POSIX paths,
// no environment, the web build of the engine (loaded before activation finishes:
// browserEngine.ts), remote agents only (browserTransports.ts), the saved conversations in the
// workspace's Memento, the fs bridge on the workspace's file system (browserBridgeFiles.ts:
// the same bridge and rules as on Node; paths through a symbolic link refused), and no
// terminals (no processes): the agent is told so by the capabilities.

import { FsBridge } from "../bridges/fs";
import type { EngineModule } from "../protocol/engine";
import type { BrowserBridgeFiles } from "./browserBridgeFiles";
import { browserFiles } from "./browserFiles";
import { browserStoreFiles } from "./browserStoreFiles";
import { browserTransports } from "./browserTransports";
import type { Platform } from "./platform";
import { posixPaths } from "./posixPaths";

/** The platform, given the engine the entry point loaded (or why it could not) and the
 *  workspace's files (browserBridgeFiles over `vscode.workspace.fs`). */
export function browserPlatform(
  engine: { module: EngineModule; from: string } | Error,
  onStoreError: (e: unknown) => void,
  files: BrowserBridgeFiles,
): Platform {
  return {
    name: "browser",
    path: posixPaths,
    env: {},
    os: "browser",
    arch: "wasm",
    files: browserFiles,
    engine() {
      if (engine instanceof Error) throw engine;
      return engine;
    },
    transports: browserTransports,
    storeFiles: (extension) => browserStoreFiles(extension.workspaceState, onStoreError),
    workspaceFiles: files,
    fsBridge: (...a) => new FsBridge(files, ...a),
    terminals: undefined,
  };
}
