// StoreFiles on Node: a directory (the extension's workspace storage + /sessions) with
// `index.json` and one `<sha-256 of the session id>.json` per thread (any id, no path games),
// each written to a temporary file renamed over.

import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import type { StoreFiles } from "./storeFiles";

/** A session id as a file name. */
function fileOf(sessionId: string): string {
  return `${crypto.createHash("sha256").update(sessionId).digest("hex").slice(0, 32)}.json`;
}

function writeAtomic(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

export function nodeStoreFiles(dir: string): StoreFiles {
  return {
    where: dir,
    readIndex() {
      try {
        return fs.readFileSync(path.join(dir, "index.json"), "utf8");
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
        throw e;
      }
    },
    writeIndex(text) {
      fs.mkdirSync(dir, { recursive: true });
      writeAtomic(path.join(dir, "index.json"), text);
    },
    readThread: (sessionId) => fs.readFileSync(path.join(dir, fileOf(sessionId)), "utf8"),
    writeThread(sessionId, text) {
      fs.mkdirSync(dir, { recursive: true });
      writeAtomic(path.join(dir, fileOf(sessionId)), text);
    },
    removeThread: (sessionId) => fs.rmSync(path.join(dir, fileOf(sessionId)), { force: true }),
  };
}
