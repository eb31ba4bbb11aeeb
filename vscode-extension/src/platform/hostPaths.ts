// The host's Paths for code that does path arithmetic on the workspace's file paths (the prompt
// input, the edits list, the view's messages, the agent settings): the Platform's, set once by
// AcpContext (the unit tests set Node's: test/unit/setup-node-platform.ts). Reading it before
// then is a bug in the composition, said as one.

import type { Paths } from "./paths";

let current: Paths | undefined;

export function useHostPaths(p: Paths): void {
  current = p;
}

export function hostPaths(): Paths {
  if (!current) throw new Error("hostPaths() before the platform was chosen (AcpContext sets it)");
  return current;
}
