// The browser bundle's checks (esbuild.mjs): nothing in dist/extension.browser.js may need
// Node, since the web worker extension host has none. `noNodeBuiltins` fails the build on an
// import of a Node built-in (`node:*` or a bare "fs"), naming the importer; `nodeGlobalsIn`
// finds uses of Node's globals, which no import check can see. Unit-tested in
// test/unit/browserBundle.test.ts.
import { builtinModules } from "node:module";
import * as path from "node:path";

/** An esbuild plugin failing the build on any import of a Node built-in, naming the importer
 *  relative to `root`. */
export function noNodeBuiltins(root) {
  const builtins = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
  return {
    name: "no-node-builtins",
    setup(build) {
      build.onResolve({ filter: /.*/ }, (args) => {
        if (!builtins.has(args.path) && !args.path.startsWith("node:")) return undefined;
        return {
          errors: [
            {
              text: `the browser bundle must not import the Node module "${args.path}" (imported by ${path.relative(root, args.importer)}): put it behind the Platform (src/platform/)`,
            },
          ],
        };
      });
    },
  };
}

/** The lines of bundled code `text` that use Node's globals (`process.`, `Buffer.`,
 *  `__dirname`, `__filename`, `require(` of anything but "vscode"), as `LINE: code`. A line that is only a
 *  comment does not count. */
export function nodeGlobalsIn(text) {
  const found = [];
  text.split("\n").forEach((line, i) => {
    const code = line.replace(/^\s*(\/\/|\*|\/\*).*$/, "");
    for (const m of code.matchAll(/(?<![\w$.])(?:(process|Buffer|require)\b\s*[.([]|(__dirname|__filename)\b)/g)) {
      if (m[1] === "require" && code.slice(m.index).startsWith('require("vscode")')) continue;
      found.push(`${i + 1}: ${code.trim().slice(0, 120)}`);
    }
  });
  return found;
}
