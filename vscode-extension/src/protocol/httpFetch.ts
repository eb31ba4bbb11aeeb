// HttpClient in the browser: `fetch`, with the body read as a stream (an SSE stream stays open
// for the connection's life), every request under one AbortController so close() ends them all.
// The browser decides about certificates; cross-origin requests need the server's CORS answers
// (acp serve gives them to local pages and to those given with --allow-origin).
//
// Architecture Invariant: this file imports neither `vscode` nor any Node module.

import type { HttpClient, HttpReply } from "./httpClient";
import { RemoteError } from "./transport";

export class FetchHttpClient implements HttpClient {
  private readonly aborter = new AbortController();

  constructor(
    private readonly url: URL,
    private readonly connectTimeoutMs = 10_000,
  ) {}

  async request(method: string, headers: Record<string, string>, o: { body?: string; stream?: boolean }): Promise<HttpReply> {
    const head = new AbortController();
    const stop = () => head.abort();
    this.aborter.signal.addEventListener("abort", stop);
    const timer = setTimeout(() => head.abort(new DOMException("timed out", "TimeoutError")), this.connectTimeoutMs);
    let res: Response;
    try {
      res = await fetch(this.url, { method, headers, body: o.body, signal: head.signal, redirect: "error", cache: "no-store" });
    } catch (e) {
      const where = this.url.host;
      if (head.signal.reason instanceof DOMException && head.signal.reason.name === "TimeoutError")
        throw new RemoteError("timeout", `connecting to ${where} timed out`);
      // The browser says no more than "Failed to fetch": refused, unresolvable, TLS or CORS.
      throw new RemoteError(
        "network",
        `cannot reach ${this.url.href} (${(e as Error).message}: is the server (acp serve --http) running, and does it allow this page's origin (acp serve --allow-origin)?)`,
      );
    } finally {
      clearTimeout(timer);
    }
    const url = this.url.href;
    const forget = () => this.aborter.signal.removeEventListener("abort", stop);
    return {
      status: res.status,
      header: (name) => res.headers.get(name) ?? undefined,
      async text(limit) {
        try {
          let body = "";
          await read(res, (chunk, decoder) => {
            body += decoder.decode(chunk, { stream: true });
            if (body.length > limit) throw new RemoteError("closed", `an answer from ${url} is over ${limit} characters`);
          });
          return body;
        } catch (e) {
          if (e instanceof RemoteError) throw e;
          throw new RemoteError("closed", `reading an answer from ${url} failed: ${(e as Error).message}`);
        } finally {
          forget();
        }
      },
      async stream(onChunk) {
        try {
          await read(res, (chunk) => onChunk(chunk));
        } finally {
          forget();
        }
      },
      discard() {
        void res.body?.cancel().catch(() => {});
        forget();
      },
    };
  }

  close(): void {
    this.aborter.abort();
  }
}

/** Reads `res`'s body to its end, chunk by chunk; a throw from `each` cancels the rest. */
async function read(res: Response, each: (chunk: Uint8Array, decoder: TextDecoder) => void): Promise<void> {
  if (!res.body) return;
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      each(value, decoder);
    }
  } catch (e) {
    await reader.cancel().catch(() => {});
    throw e;
  }
}
