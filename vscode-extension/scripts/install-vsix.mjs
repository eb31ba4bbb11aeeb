// `npm run install-vsix`: builds the wasm engine if it is missing, packages the extension and
// installs the .vsix with the editor's CLI (`code` by default; set VSCODE_CLI=code-server, or
// codium, …). Exits non-zero on the first failure.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const ext = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const root = path.resolve(ext, "..");
const run = (cmd, args, cwd = ext) => {
  console.log(`$ ${[cmd, ...args].join(" ")}`);
  execFileSync(cmd, args, { cwd, stdio: "inherit" });
};

if (!fs.existsSync(path.join(root, "acp-wasm", "pkg", "node", "acp_wasm.js"))) {
  run("bash", [path.join(root, "scripts", "wasm-toolchain.sh")], root);
  run("bash", [path.join(root, "scripts", "build-wasm.sh")], root);
}
run("npm", ["run", "--silent", "package"]);
run(process.env.VSCODE_CLI ?? "code", ["--install-extension", path.join(ext, "acp-rs-vscode.vsix"), "--force"]);
