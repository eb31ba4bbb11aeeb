// HttpClient on Node: `node:http` / `node:https` with one keep-alive agent per transport,
// trusting the agent's caFile besides the system's certificates.
//
// Architecture Invariant: this file does not import `vscode`.

import * as http from "node:http";
import * as https from "node:https";
import type { HttpClient, HttpReply } from "./httpClient";
import { describeConnectError } from "./remote";
import { RemoteError } from "./transport";

export class NodeHttpClient implements HttpClient {
  private readonly agent: http.Agent;
  private readonly requests = new Set<http.ClientRequest>();

  constructor(
    private readonly url: URL,
    o: { ca?: string | Buffer; connectTimeoutMs?: number } = {},
    private readonly connectTimeoutMs = o.connectTimeoutMs ?? 10_000,
  ) {
    this.agent = url.protocol === "https:" ? new https.Agent({ keepAlive: true, ca: o.ca }) : new http.Agent({ keepAlive: true });
  }

  request(method: string, headers: Record<string, string>, o: { body?: string; stream?: boolean }): Promise<HttpReply> {
    const mod = this.url.protocol === "https:" ? https : http;
    return new Promise((resolve, reject) => {
      const req = mod.request(this.url, { method, headers, agent: this.agent, timeout: this.connectTimeoutMs });
      this.requests.add(req);
      req.on("timeout", () => req.destroy(Object.assign(new Error("timed out"), { code: "ETIMEDOUT" })));
      req.on("error", (err: NodeJS.ErrnoException) => {
        this.requests.delete(req);
        reject(describeConnectError(this.url.href, err));
      });
      req.on("close", () => this.requests.delete(req));
      req.on("response", (res) => {
        // A stream may stay quiet for long (the server sends a keepalive every 15 s).
        if (o.stream) req.setTimeout(0);
        resolve(reply(this.url.href, res));
      });
      req.end(o.body);
    });
  }

  close(): void {
    for (const r of this.requests) r.destroy();
    this.requests.clear();
    this.agent.destroy();
  }
}

function reply(url: string, res: http.IncomingMessage): HttpReply {
  return {
    status: res.statusCode ?? 0,
    header(name) {
      const v = res.headers[name];
      return Array.isArray(v) ? v[0] : v;
    },
    text(limit) {
      return new Promise((resolve, reject) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (s: string) => {
          body += s;
          if (body.length > limit) {
            res.destroy();
            reject(new RemoteError("closed", `an answer from ${url} is over ${limit} characters`));
          }
        });
        res.on("end", () => resolve(body));
        res.on("error", (e) => reject(new RemoteError("closed", `reading an answer from ${url} failed: ${e.message}`)));
      });
    },
    stream(onChunk) {
      return new Promise((resolve, reject) => {
        res.on("data", (chunk: Buffer) => onChunk(chunk));
        res.on("end", () => resolve());
        res.on("error", (e) => reject(e));
        res.on("aborted", () => reject(new Error("aborted")));
        res.on("close", () => reject(new Error("closed")));
      });
    },
    discard: () => void res.resume(),
  };
}
