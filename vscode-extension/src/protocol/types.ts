// The subset of ACP message shapes (shared/acp-schema/v1/schema.json) the extension reads or
// writes. Fields the extension does not use are left out; unknown fields are tolerated.

export type SessionId = string;

export interface Implementation {
  name: string;
  title?: string | null;
  version: string;
}

export interface ClientCapabilities {
  fs: { readTextFile: boolean; writeTextFile: boolean };
  terminal: boolean;
}

export interface InitializeRequest {
  protocolVersion: number;
  clientCapabilities: ClientCapabilities;
  clientInfo?: Implementation;
}

export interface InitializeResponse {
  protocolVersion: number;
  agentCapabilities?: {
    loadSession?: boolean;
    promptCapabilities?: { image?: boolean; audio?: boolean; embeddedContext?: boolean };
  };
  authMethods?: Array<{ id: string; name: string; description?: string | null }>;
  agentInfo?: Implementation | null;
}

export interface SessionMode {
  id: string;
  name: string;
  description?: string | null;
}
export interface SessionModeState {
  currentModeId: string;
  availableModes: SessionMode[];
}

export interface SessionConfigSelectOption {
  value: string;
  name: string;
  description?: string | null;
}
export interface SessionConfigSelectGroup {
  group: string;
  name: string;
  options: SessionConfigSelectOption[];
}
export type SessionConfigOption =
  | {
      type: "select";
      id: string;
      name: string;
      description?: string | null;
      currentValue: string;
      options: SessionConfigSelectOption[] | SessionConfigSelectGroup[];
    }
  | { type: "boolean"; id: string; name: string; description?: string | null; currentValue: boolean };

export interface NewSessionResponse {
  sessionId: SessionId;
  modes?: SessionModeState | null;
  configOptions?: SessionConfigOption[] | null;
}

export type ContentBlock =
  | { type: "text"; text: string }
  | { type: "image"; data: string; mimeType: string }
  | { type: "audio"; data: string; mimeType: string }
  | { type: "resource_link"; uri: string; name: string; title?: string | null }
  | { type: "resource"; resource: { uri: string; text?: string; blob?: string; mimeType?: string | null } };

export type ToolCallStatus = "pending" | "in_progress" | "completed" | "failed";
export type ToolKind = "read" | "edit" | "delete" | "move" | "search" | "execute" | "think" | "fetch" | "switch_mode" | "other";

export type ToolCallContent =
  | { type: "content"; content: ContentBlock }
  | { type: "diff"; path: string; oldText?: string | null; newText: string }
  | { type: "terminal"; terminalId: string };

export interface ToolCallLocation {
  path: string;
  line?: number | null;
}

export interface ToolCallUpdate {
  toolCallId: string;
  title?: string | null;
  kind?: ToolKind | null;
  status?: ToolCallStatus | null;
  content?: ToolCallContent[] | null;
  locations?: ToolCallLocation[] | null;
  rawInput?: unknown;
  rawOutput?: unknown;
}

export interface PlanEntry {
  content: string;
  priority: "high" | "medium" | "low";
  status: "pending" | "in_progress" | "completed";
}

export type SessionUpdate =
  | { sessionUpdate: "user_message_chunk"; content: ContentBlock }
  | { sessionUpdate: "agent_message_chunk"; content: ContentBlock }
  | { sessionUpdate: "agent_thought_chunk"; content: ContentBlock }
  | ({ sessionUpdate: "tool_call"; title: string } & ToolCallUpdate)
  | ({ sessionUpdate: "tool_call_update" } & ToolCallUpdate)
  | { sessionUpdate: "plan"; entries: PlanEntry[] }
  | { sessionUpdate: "available_commands_update"; availableCommands: Array<{ name: string; description: string }> }
  | { sessionUpdate: "current_mode_update"; currentModeId: string }
  | { sessionUpdate: "config_option_update"; configOptions: SessionConfigOption[] }
  | { sessionUpdate: "session_info_update"; title?: string | null }
  | { sessionUpdate: "usage_update"; used: number; size: number };

export interface SessionNotification {
  sessionId: SessionId;
  update: SessionUpdate;
}

export type StopReason = "end_turn" | "max_tokens" | "max_turn_requests" | "refusal" | "cancelled";
export interface PromptResponse {
  stopReason: StopReason;
}

/** Kinds this version does not know are kept (shown, never chosen automatically). */
export type PermissionOptionKind = "allow_once" | "allow_always" | "reject_once" | "reject_always" | (string & {});
export interface PermissionOption {
  optionId: string;
  name: string;
  kind: PermissionOptionKind;
}
export interface RequestPermissionRequest {
  sessionId: SessionId;
  toolCall: ToolCallUpdate;
  options: PermissionOption[];
}
export type RequestPermissionOutcome = { outcome: "cancelled" } | { outcome: "selected"; optionId: string };
export interface RequestPermissionResponse {
  outcome: RequestPermissionOutcome;
}

export interface ReadTextFileRequest {
  sessionId: SessionId;
  path: string;
  line?: number | null;
  limit?: number | null;
}
export interface ReadTextFileResponse {
  content: string;
}
export interface WriteTextFileRequest {
  sessionId: SessionId;
  path: string;
  content: string;
}

export interface EnvVariable {
  name: string;
  value: string;
}
export interface CreateTerminalRequest {
  sessionId: SessionId;
  command: string;
  args?: string[];
  env?: EnvVariable[];
  cwd?: string | null;
  outputByteLimit?: number | null;
}
export interface TerminalExitStatus {
  exitCode?: number | null;
  signal?: string | null;
}
export interface TerminalOutputResponse {
  output: string;
  truncated: boolean;
  exitStatus?: TerminalExitStatus | null;
}
export interface TerminalRequest {
  sessionId: SessionId;
  terminalId: string;
}

/** JSON-RPC / ACP error codes used by the client handlers. */
export const ErrorCodes = {
  InvalidParams: -32602,
  MethodNotFound: -32601,
  InternalError: -32603,
  RequestCancelled: -32800,
  ResourceNotFound: -32002,
} as const;

/** An error a handler throws to answer a request with a specific JSON-RPC error. */
export class RequestError extends Error {
  override name = "RequestError";
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}
