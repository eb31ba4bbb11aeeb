// AgentTransports in the browser (VS Code for the Web): no process can be spawned, so a local
// agent is refused with words that say what works instead; a remote agent is reached over the
// browser's WebSocket (protocol/remoteBrowser.ts). The official HTTP transport (http:// and
// https:// URLs) needs a streaming fetch client that is not written yet: refused with words.

import { BrowserRemoteAgent } from "../protocol/remoteBrowser";
import { TransportRefused, type AgentTransports } from "./platform";

export const LOCAL_AGENTS_UNAVAILABLE =
  "local agents cannot run in VS Code for the Web (the browser cannot start processes): " +
  'add a remote agent to acp.agents, e.g. { "name": "remote", "url": "ws://HOST:PORT/acp" } for `acp serve --http`';

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
      throw new TransportRefused(
        `the HTTP transport (${spec.url}) is not available in VS Code for the Web yet: use the server's WebSocket URL (ws://HOST:PORT/acp or wss://…)`,
      );
    }
    return new BrowserRemoteAgent(spec.url, { token: o.token }, events);
  },
};
