// Paths: the path arithmetic the extension does on file paths, as `node:path` spells it. On
// Node it is `node:path` itself (Windows paths on Windows); in the browser the workspace's
// paths are always POSIX (`vscode-remote://…/home/u/p`, `vscode-vfs://github/o/r/…`), so
// posixPaths.ts implements it there.

export interface Paths {
  readonly sep: string;
  readonly delimiter: string;
  join(...parts: string[]): string;
  resolve(...parts: string[]): string;
  relative(from: string, to: string): string;
  dirname(p: string): string;
  basename(p: string, ext?: string): string;
  isAbsolute(p: string): boolean;
  normalize(p: string): string;
}
