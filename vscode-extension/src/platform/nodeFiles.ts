// HostFiles on Node: `node:fs`, and `node:url` for file URLs (Windows drive letters included).

import * as fs from "node:fs";
import * as fsp from "node:fs/promises";
import { pathToFileURL } from "node:url";
import type { HostFiles } from "./hostFiles";

export const nodeFiles: HostFiles = {
  isExecutable(p) {
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return fs.statSync(p).isFile();
    } catch {
      return false;
    }
  },
  readSmallFile(p) {
    try {
      if (fs.statSync(p).size > 4 << 20) return undefined;
      return fs.readFileSync(p, "utf8");
    } catch {
      return undefined;
    }
  },
  async readForPrompt(file, max) {
    const fh = await fsp.open(file, "r");
    try {
      const { size } = await fh.stat();
      if (size > max) return { size, text: null };
      const buf = Buffer.alloc(Math.min(size, max) + 1);
      const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
      const bytes = buf.subarray(0, bytesRead);
      if (bytes.includes(0)) return { size, text: null };
      try {
        return { size, text: new TextDecoder("utf-8", { fatal: true }).decode(bytes) };
      } catch {
        return { size, text: null };
      }
    } finally {
      await fh.close();
    }
  },
  fileUrl: (p) => pathToFileURL(p).href,
};
