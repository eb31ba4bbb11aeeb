// Injected into every unit test bundle (esbuild.mjs --tests): the host's paths are Node's, as
// the Node entry point (src/extension.ts, through AcpContext) sets them, and so is the OS.
import * as path from "node:path";
import { useHostOs } from "../../src/platform/hostOs";
import { useHostPaths } from "../../src/platform/hostPaths";

useHostPaths(path);
useHostOs(process.platform);
