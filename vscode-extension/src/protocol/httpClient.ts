// HttpClient: the HTTP requests the HTTP + SSE transport (remoteSse.ts) makes, to one agent URL,
// so the transport's rules are the same on Node (httpNode.ts: `node:http`/`https`, a keep-alive
// agent, the agent's caFile) and in the browser (httpFetch.ts: `fetch` with streamed bodies).
//
// Architecture Invariant: this file imports neither `vscode` nor any Node module.

/** One answer, once its head arrived. */
export interface HttpReply {
  readonly status: number;
  /** A response header (lower-case name), or undefined. */
  header(name: string): string | undefined;
  /** The whole body as text; rejects with a RemoteError past `limit` characters or on failure. */
  text(limit: number): Promise<string>;
  /** Hands each piece of the body to `onChunk`; resolves when the server ended it, rejects with
   *  an Error saying why when it failed. */
  stream(onChunk: (chunk: Uint8Array) => void): Promise<void>;
  /** Reads and drops the body (frees the connection). */
  discard(): void;
}

export interface HttpClient {
  /** One request to the agent's URL. Rejects with a RemoteError saying why no answer came
   *  (refused, unresolvable, timed out before the head, TLS). A `stream` request has no time
   *  limit once its head arrived. */
  request(method: string, headers: Record<string, string>, o: { body?: string; stream?: boolean }): Promise<HttpReply>;
  /** Ends every request and stream under way. */
  close(): void;
}
