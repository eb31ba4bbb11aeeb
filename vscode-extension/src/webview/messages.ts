// Messages between the extension host and the chat webview (both directions are validated by
// the receiver: the webview trusts nothing but this shape, and renders agent text safely).

import type { SessionConfigOption, SessionModeState, SessionUpdate, StopReason } from "../protocol/types";

export interface SessionInfo {
  sessionId: string;
  agent: string;
  modes?: SessionModeState | null;
  configOptions?: SessionConfigOption[] | null;
}

export type HostToWebview =
  | { type: "status"; state: string; text: string }
  | { type: "session"; info: SessionInfo | null }
  | { type: "userPrompt"; text: string }
  | { type: "updates"; updates: SessionUpdate[] }
  | { type: "turnEnded"; stopReason: StopReason | "error"; message?: string }
  | { type: "busy"; busy: boolean }
  | { type: "notice"; level: "info" | "error"; text: string };

export type WebviewToHost =
  | { type: "ready" }
  | { type: "prompt"; text: string }
  | { type: "cancel" }
  | { type: "newSession" }
  | { type: "setMode"; modeId: string }
  | { type: "setConfig"; configId: string; value: string | boolean }
  | { type: "openDiff"; toolCallId: string; index: number };
