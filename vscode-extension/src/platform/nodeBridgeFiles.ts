// BridgeFiles on Node: the disk through `node:fs`; real paths with symlinks resolved, those of
// the longest existing ancestor and dangling ones too (a link to a missing file is followed to
// where writing it would create the file), at most 40 links (then refused, like the OS's ELOOP).

import * as fsp from "node:fs/promises";
import * as path from "node:path";
import type { BridgeFiles } from "../bridges/fsFiles";

/** The real path `p` reaches (see above), or undefined past 40 links. */
export async function realPathOfMaybeMissing(p: string, links = { left: 40 }): Promise<string | undefined> {
  const abs = path.resolve(p);
  try {
    return await fsp.realpath(abs);
  } catch {
    /* missing somewhere, or a dangling link */
  }
  const st = await fsp.lstat(abs).catch(() => undefined);
  if (st?.isSymbolicLink()) {
    if (links.left-- <= 0) return undefined;
    const target = await fsp.readlink(abs);
    return realPathOfMaybeMissing(path.resolve(path.dirname(abs), target), links);
  }
  const parent = path.dirname(abs);
  if (parent === abs) return abs;
  const real = await realPathOfMaybeMissing(parent, links);
  return real === undefined ? undefined : path.join(real, path.basename(abs));
}

export const nodeBridgeFiles: BridgeFiles = {
  realPath: (p) => realPathOfMaybeMissing(p),
  readFile: (p) => fsp.readFile(p),
  async stat(p) {
    try {
      const st = await fsp.stat(p);
      return { isFile: st.isFile(), isDirectory: st.isDirectory(), size: st.size, executable: st.isFile() && (st.mode & 0o111) !== 0 };
    } catch {
      return undefined;
    }
  },
};
