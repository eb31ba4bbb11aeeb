// `npm run install-vsix`: builds the wasm engines if they are missing (the default and client
// flavours, and the client-v2 one), packages the extension and
// installs the .vsix with the editor's CLI (`code` by default; set VSCODE_CLI=code-server, or
// codium, …). Exits non-zero on the first failure.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const ext = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const root = path.resolve(ext, "..");
const run = (cmd, args, cwd = ext, env = {}) => {
  console.log(`$ ${[...Object.entries(env).map(([k, v]) => `${k}=${v}`), cmd, ...args].join(" ")}`);
  execFileSync(cmd, args, { cwd, stdio: "inherit", env: { ...process.env, ...env } });
};

const pkg = (dir) => fs.existsSync(path.join(root, "acp-wasm", "pkg", dir, "acp_wasm.js"));
if (!pkg("node") || !pkg("nodejs-client") || !pkg("web-client")) {
  run("bash", [path.join(root, "scripts", "wasm-toolchain.sh")], root);
  run("bash", [path.join(root, "scripts", "build-wasm.sh")], root);
}
// The ACP v2 (draft) build, packaged for the acp.experimental.protocolV2 setting.
if (!pkg("nodejs-client-v2")) {
  run("bash", [path.join(root, "scripts", "wasm-toolchain.sh")], root);
  run("bash", [path.join(root, "scripts", "build-wasm.sh")], root, { ACP_WASM_FLAVOURS: "client-v2" });
}
run("npm", ["run", "--silent", "package"]);
run(process.env.VSCODE_CLI ?? "code", ["--install-extension", path.join(ext, "acp-rs-vscode.vsix"), "--force"]);
