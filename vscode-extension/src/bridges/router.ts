// Routes the agent's requests to the bridges (permission, fs, terminal) and its notifications to
// the session listener. Anything else is answered "method not found".
//
// Architecture Invariant: this file does not import `vscode`.

import type { CancellationToken } from "../protocol/cancellation";
import type { IncomingHandler } from "../protocol/client";
import { JsonRpc, RequestError } from "../protocol/errors";
import type { Logger } from "../protocol/log";
import type { FsBridge } from "./fs";
import type { PermissionBridge } from "./permission";
import type { TerminalManager } from "./terminal";

export interface ClientBridges {
  permission: PermissionBridge;
  fs?: FsBridge;
  terminal?: TerminalManager;
  /** A `session/update`'s params, as their JSON text when the client has it (folded by
   *  acp-client's thread model, not here). */
  onSessionUpdate(sessionId: string, params: unknown): void;
  log: Logger;
  /** The connection speaks ACP v2 (draft): its permission questions are read as v1's
   *  (`PermissionBridge.handleV2`, acp-client's rule through the engine). */
  v2?(): boolean;
}

export class ClientRouter implements IncomingHandler {
  constructor(private readonly b: ClientBridges) {}

  async handleRequest(method: string, params: unknown, token: CancellationToken): Promise<unknown> {
    switch (method) {
      case "session/request_permission":
        return this.b.v2?.() ? this.b.permission.handleV2(params, token) : this.b.permission.handle(params, token);
      case "fs/read_text_file":
        return this.need(this.b.fs, method).readTextFile(params);
      case "fs/write_text_file":
        return this.need(this.b.fs, method).writeTextFile(params, token);
      case "terminal/create":
        return this.need(this.b.terminal, method).create(params, token);
      case "terminal/output":
        return this.need(this.b.terminal, method).output(params);
      case "terminal/wait_for_exit":
        return this.need(this.b.terminal, method).waitForExit(params, token);
      case "terminal/kill":
        return this.need(this.b.terminal, method).kill(params);
      case "terminal/release":
        return this.need(this.b.terminal, method).release(params);
      default:
        throw new RequestError(JsonRpc.MethodNotFound, `method not found: ${method}`);
    }
  }

  handleNotification(method: string, params: unknown, paramsJson?: string): void {
    if (method === "session/update") {
      const sessionId = (params as { sessionId?: unknown } | undefined)?.sessionId;
      if (typeof sessionId !== "string") {
        this.b.log.warn("session/update without a sessionId dropped");
        return;
      }
      this.b.onSessionUpdate(sessionId, paramsJson ?? params);
      return;
    }
    this.b.log.info(`notification ${method} ignored`);
  }

  private need<T>(x: T | undefined, method: string): T {
    if (!x) throw new RequestError(JsonRpc.MethodNotFound, `${method}: capability not advertised`);
    return x;
  }
}
