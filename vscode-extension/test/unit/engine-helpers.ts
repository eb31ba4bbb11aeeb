// Loads the real acp-wasm package for tests. When it is not built the engine tests are skipped,
// unless ACP_REQUIRE_WASM=1 (scripts/test-vscode.sh and CI set it), which makes them fail.
import * as path from "node:path";
import type { StartOptions } from "../../src/protocol/agent";
import type { IncomingHandler } from "../../src/protocol/client";
import type { EngineModule } from "../../src/protocol/engine";
import { nullLogger, nullTrace } from "../../src/protocol/log";
import { nodeTransports } from "../../src/platform/nodeTransports";
import { engineEntry, loadEngine } from "../../src/platform/nodeEngine";
import { ClientPolicy } from "../../src/protocol/policy";

export const extensionRoot = path.resolve(__dirname, "..", "..");

export function tryEngine(): { engine?: EngineModule; entry?: string; skip: string | false } {
  try {
    const { module, dir } = loadEngine(extensionRoot);
    return { engine: module, entry: engineEntry(dir), skip: false };
  } catch (e) {
    if (process.env.ACP_REQUIRE_WASM === "1") throw e;
    return { skip: `acp-wasm not built (${(e as Error).message})` };
  }
}

/** acp-client's decisions from the real engine (tests using it skip like the engine tests). */
export function testPolicy(): ClientPolicy {
  return new ClientPolicy(() => loadEngine(extensionRoot).module);
}

/** `AgentConnection.start`'s options as the tests use them: Node transports, no client fs or
 *  terminal, quiet logs; `extra` overrides any of them. */
export function startOptions(engine: EngineModule, handler: IncomingHandler, extra: Partial<StartOptions> = {}): StartOptions {
  return {
    engine,
    transports: nodeTransports,
    engineOptions: {},
    capabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    clientInfo: { name: "test", version: "0" },
    handler,
    log: nullLogger,
    trace: nullTrace,
    onStderr: () => {},
    ...extra,
  };
}
