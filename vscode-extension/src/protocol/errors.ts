// The error a request handler throws to answer with a JSON-RPC error. Which code and
// `data.reason` an fs/terminal failure answers is acp-client's (ClientPolicy.failure); the codes
// here are JSON-RPC's own, for requests that cannot be read at all or name no method we serve.
//
// Architecture Invariant: this file does not import `vscode`.

/** JSON-RPC 2.0's codes, and ACP's cancellation code (-32800). */
export const JsonRpc = {
  InvalidParams: -32602,
  MethodNotFound: -32601,
  InternalError: -32603,
  RequestCancelled: -32800,
} as const;

/** An error a handler throws to answer a request with a specific JSON-RPC error. */
export class RequestError extends Error {
  override name = "RequestError";
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}
