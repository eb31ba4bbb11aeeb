// AgentTransports on Node: a local agent is a spawned process (protocol/process.ts, with
// Windows' own rules in windowsSpawn.ts); a remote one is reached over WebSocket with `ws`
// (protocol/remote.ts) or over the official HTTP transport with `node:http`
// (protocol/remoteSse.ts), trusting the agent's `caFile` besides the system's certificates.

import * as fs from "node:fs";
import { AgentProcess } from "../protocol/process";
import { RemoteAgent } from "../protocol/remote";
import { SseRemoteAgent } from "../protocol/remoteSse";
import { NodeHttpClient } from "../protocol/httpNode";
import { SpawnRefused } from "../protocol/windowsSpawn";
import { TransportRefused, type AgentTransports } from "./platform";

export const nodeTransports: AgentTransports = {
  localAgentsUnavailable: undefined,
  open(spec, o, events) {
    if (!spec.url) {
      try {
        return new AgentProcess(spec, events);
      } catch (e) {
        // Windows: found nowhere, or a batch file an argument cannot be passed to safely.
        if (e instanceof SpawnRefused) throw new TransportRefused(e.message);
        throw e;
      }
    }
    let ca: Buffer | undefined;
    if (spec.caFile) {
      try {
        ca = fs.readFileSync(spec.caFile);
      } catch (e) {
        throw new TransportRefused(`cannot read its caFile ${JSON.stringify(spec.caFile)}: ${(e as Error).message}`);
      }
    }
    return /^https?:/i.test(spec.url)
      ? new SseRemoteAgent(spec.url, { token: o.token, engine: o.engine, http: (url) => new NodeHttpClient(url, { ca }) }, events)
      : new RemoteAgent(spec.url, { token: o.token, ca }, events);
  },
};
