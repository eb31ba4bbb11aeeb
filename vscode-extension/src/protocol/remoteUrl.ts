// A remote agent's URL: which ones this client speaks, the key its token is kept under, and the
// words for an HTTP refusal. Shared by every remote transport (remote.ts on Node's `ws`,
// remoteSse.ts on `node:http`, remoteBrowser.ts on the browser's WebSocket) and the settings.
//
// Architecture Invariant: this file imports neither `vscode` nor any Node module.

import { RemoteError } from "./transport";

/** The URL a remote agent setting names, or why it is not one this client speaks. */
export function checkRemoteUrl(url: string): URL | RemoteError {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return new RemoteError("url", `${JSON.stringify(url)} is not a URL (expected ws://HOST:PORT/acp, wss://…, http://… or https://…)`);
  }
  if (!["ws:", "wss:", "http:", "https:"].includes(u.protocol)) {
    return new RemoteError("url", `${url}: the scheme must be ws:// or wss:// (WebSocket), or http:// or https:// (HTTP + SSE)`);
  }
  if (u.username || u.password)
    return new RemoteError("url", `${url}: put no credentials in the URL (the token is asked for and kept in VS Code's secret storage)`);
  return u;
}

/** The key a token is kept under: the URL's origin (scheme, host, port). */
export function tokenKey(url: string): string {
  return new URL(url).origin;
}

/** Words for an HTTP error answer (to the WebSocket upgrade, or to a request `during`). */
export function describeHttpRefusal(url: string, status: number, body: string, during = "the WebSocket upgrade"): RemoteError {
  const said = body.trim() ? `: ${body.trim().slice(0, 200)}` : "";
  switch (status) {
    case 401:
      return new RemoteError("unauthorized", `${url} refused the token (HTTP 401${said})`, status);
    case 403:
      return new RemoteError("forbidden", `${url} refused the connection (HTTP 403${said})`, status);
    case 404:
      return new RemoteError("not_found", `nothing at ${url} (HTTP 404${said}): the path of acp serve --http is /acp`, status);
    default:
      return new RemoteError("http", `${url} answered HTTP ${status} to ${during}${said}`, status);
  }
}
