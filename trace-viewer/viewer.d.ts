// Types of viewer.js for the VS Code extension's TypeScript.
import type { Filter, TraceSource } from "./model";

export interface Viewer {
  /** Looks at the source again (its status first) and redraws what changed. */
  refresh(): Promise<void>;
  dispose(): void;
}

export function startViewer(root: HTMLElement, source: TraceSource, options?: { filter?: Filter; poll?: number }): Viewer;
export function visibleText(s: string): string;
export function visibleLine(s: string): string;
