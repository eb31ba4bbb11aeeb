// StoreFiles in the browser: the workspace's Memento (`ExtensionContext.workspaceState`, kept by
// VS Code in the browser's storage), read synchronously, written in the background. The keys
// are `acp.sessions.index` and `acp.sessions.thread.<session id>`.

import type * as vscode from "vscode";
import type { StoreFiles } from "./storeFiles";

const INDEX = "acp.sessions.index";
const thread = (sessionId: string) => `acp.sessions.thread.${sessionId}`;

export function browserStoreFiles(state: vscode.Memento, onError: (e: unknown) => void): StoreFiles {
  const put = (key: string, value: string | undefined) => void Promise.resolve(state.update(key, value)).catch(onError);
  return {
    where: "workspace state",
    readIndex: () => state.get<string>(INDEX),
    writeIndex: (text) => put(INDEX, text),
    readThread(sessionId) {
      const text = state.get<string>(thread(sessionId));
      if (text === undefined) throw new Error("not saved in this workspace's state");
      return text;
    },
    writeThread: (sessionId, text) => put(thread(sessionId), text),
    removeThread: (sessionId) => put(thread(sessionId), undefined),
  };
}
