// Loads the real acp-wasm package for tests. When it is not built the engine tests are skipped,
// unless ACP_REQUIRE_WASM=1 (scripts/test-vscode.sh and CI set it), which makes them fail.
import * as path from "node:path";
import type { EngineModule } from "../../src/protocol/engine";
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
