// Checks that the built acp-wasm modules import nothing from the module "env".
//
// An "env" import is what the linker leaves behind when Rust code (acp-core or a dependency) calls
// a C/libc symbol or an unsupported std function on wasm32-unknown-unknown: such a module cannot be
// instantiated by the wasm-bindgen glue. No "env" import proves acp-core compiles cleanly for wasm32.
//
// Usage: node acp-wasm/tests/no-env-imports.mjs [file.wasm ...]
// Without arguments it checks the raw cargo output of each flavour (acp_wasm.default.wasm,
// acp_wasm.client.wasm: scripts/build-wasm.sh copies them aside) and the four wasm-bindgen
// packages (node, web, nodejs-client, web-client).
import { readFileSync, existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join, relative } from "node:path";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Returns the "env" imports of a compiled module, as "env.name" strings. */
function envImports(bytes) {
  const mod = new WebAssembly.Module(bytes);
  return WebAssembly.Module.imports(mod)
    .filter((i) => i.module === "env")
    .map((i) => `${i.module}.${i.name} (${i.kind})`);
}

// Self-check: a hand-made module with one "env" import must be flagged, and one without must not,
// so this script cannot pass by checking nothing.
const withEnv = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
  0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type section: () -> ()
  0x02, 0x09, 0x01, 0x03, 0x65, 0x6e, 0x76, 0x01, 0x66, 0x00, 0x00, // import "env" "f" func 0
]);
const withoutEnv = withEnv.slice();
withoutEnv.set([0x77, 0x62, 0x67], 18); // rename the import module "env" -> "wbg"
if (envImports(withEnv).length !== 1 || envImports(withoutEnv).length !== 0) {
  console.error("no-env-imports: self-check failed: the checker does not detect env imports");
  process.exit(2);
}

const args = process.argv.slice(2);
const pkg = process.env.ACP_WASM_OUT ?? join(root, "acp-wasm/pkg");
const files = args.length
  ? args
  : ["node", "web", "nodejs-client", "web-client"].map((dir) => join(pkg, dir, "acp_wasm_bg.wasm"));
if (args.length === 0) {
  const targetDir = process.env.ACP_WASM_TARGET_DIR ?? join(root, "target-wasm");
  for (const flavour of ["default", "client"]) {
    files.push(join(targetDir, "wasm32-unknown-unknown", process.env.ACP_WASM_PROFILE ?? "wasm", `acp_wasm.${flavour}.wasm`));
  }
}

let failed = 0;
for (const file of files) {
  if (!existsSync(file)) {
    console.error(`FAIL ${file}: missing (run scripts/build-wasm.sh)`);
    failed++;
    continue;
  }
  const bytes = readFileSync(file);
  const mods = [...new Set(WebAssembly.Module.imports(new WebAssembly.Module(bytes)).map((i) => i.module))];
  const env = envImports(bytes);
  const name = relative(root, file) || file;
  if (env.length) {
    console.error(`FAIL ${name}: ${env.length} import(s) from "env": ${env.join(", ")}`);
    failed++;
  } else {
    console.log(`ok   ${name}: no "env" imports (import modules: ${mods.join(", ") || "none"})`);
  }
}
console.log(`no-env-imports: ${files.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
