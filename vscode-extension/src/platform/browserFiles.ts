// HostFiles in the browser: no file on disk is reachable from the web worker (a file attached
// to a prompt is sent from its open editor), no `acp` binary, no registry cache.

import type { HostFiles } from "./hostFiles";

export const browserFiles: HostFiles = {
  isExecutable: () => false,
  readSmallFile: () => undefined,
  readForPrompt: () => Promise.reject(new Error("files can be attached in VS Code for the Web only while open in an editor")),
  fileUrl: (p) => `file://${encodeURI(p).replace(/[?#]/g, encodeURIComponent)}`,
};
