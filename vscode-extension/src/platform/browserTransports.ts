// AgentTransports in the browser (VS Code for the Web): no process can be spawned, so a local
// agent is refused with words that say what works instead; a remote agent is reached over the
// browser's WebSocket (protocol/remoteBrowser.ts), or over the official HTTP transport
// (http:// and https:// URLs: protocol/remoteSse.ts on `fetch`, protocol/httpFetch.ts).

import { FetchHttpClient } from "../protocol/httpFetch";
import { BrowserRemoteAgent } from "../protocol/remoteBrowser";
import { SseRemoteAgent } from "../protocol/remoteSse";
import { TransportRefused, type AgentTransports } from "./platform";

export const LOCAL_AGENTS_UNAVAILABLE =
  "local agents cannot run in VS Code for the Web (the browser cannot start processes): " +
  'add a remote agent to acp.agents, e.g. { "name": "remote", "url": "ws://HOST:PORT/acp" } for `acp serve --http` (or its http://HOST:PORT/acp for the HTTP transport)';

export const browserTransports: AgentTransports = {
  localAgentsUnavailable: LOCAL_AGENTS_UNAVAILABLE,
  open(spec, o, events) {
    if (!spec.url) throw new TransportRefused(LOCAL_AGENTS_UNAVAILABLE);
    if (spec.caFile) {
      throw new TransportRefused(
        `caFile is not supported in VS Code for the Web (the browser trusts only its own certificates): remove it, or trust the certificate in the browser`,
      );
    }
    if (/^https?:/i.test(spec.url)) {
      return new SseRemoteAgent(spec.url, { token: o.token, engine: o.engine, http: (url) => new FetchHttpClient(url) }, events);
    }
    return new BrowserRemoteAgent(spec.url, { token: o.token }, events);
  },
};
