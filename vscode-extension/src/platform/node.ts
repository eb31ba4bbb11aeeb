// The Platform on Node (VS Code desktop, code-server's and Remote's server-side extension
// host): `node:path`, the process's environment, the nodejs build of the engine, spawned and
// `ws`/`http` transports, session files on disk, and the fs and terminal bridges.

import * as path from "node:path";
import { FsBridge } from "../bridges/fs";
import { TerminalManager } from "../bridges/terminal";
import { nodeBridgeFiles } from "./nodeBridgeFiles";
import { loadEngine } from "./nodeEngine";
import { nodeFiles } from "./nodeFiles";
import { nodeStoreFiles } from "./nodeStoreFiles";
import { nodeTransports } from "./nodeTransports";
import type { Platform } from "./platform";

export const nodePlatform: Platform = {
  name: "node",
  path,
  env: process.env,
  os: process.platform,
  arch: process.arch,
  files: nodeFiles,
  engine(extension, v2) {
    const { module, dir } = loadEngine(extension.extensionPath, v2);
    return { module, from: dir };
  },
  transports: nodeTransports,
  storeFiles: (extension) => nodeStoreFiles(path.join((extension.storageUri ?? extension.globalStorageUri).fsPath, "sessions")),
  fsBridge: (...a) => new FsBridge(nodeBridgeFiles, ...a),
  terminals: (...a) => new TerminalManager(...a),
};
