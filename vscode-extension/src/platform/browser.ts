// The Platform in the browser (VS Code for the Web's web worker extension host): POSIX paths,
// no environment, the web build of the engine (loaded before activation finishes:
// browserEngine.ts), remote agents only (browserTransports.ts), the saved conversations in the
// workspace's Memento, and neither the fs bridge (it reads through `fs` and realpath to keep
// the agent inside the workspace, which the worker cannot) nor terminals (no processes): the
// agent is told so by the capabilities.

import type { EngineModule } from "../protocol/engine";
import { browserFiles } from "./browserFiles";
import { browserStoreFiles } from "./browserStoreFiles";
import { browserTransports } from "./browserTransports";
import type { Platform } from "./platform";
import { posixPaths } from "./posixPaths";

/** The platform, given the engine the entry point loaded (or why it could not). */
export function browserPlatform(engine: { module: EngineModule; from: string } | Error, onStoreError: (e: unknown) => void): Platform {
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
    fsBridge: undefined,
    terminals: undefined,
  };
}
