// Permission requests: turning the agent's `session/request_permission` into a prompt built
// from the agent's own options, and the user's answer back into a validated outcome.
//
// Policy (documented in README.md):
// - The dialog offers exactly the agent's options, in the agent's order.
// - Dismissing the dialog (Escape / close) answers with the agent's `reject_once` option when it
//   offered one (the user did not approve this call; the turn goes on), else `cancelled`.
//   `reject_always` is never chosen implicitly: it would persist a rule the user never picked.
// - session/cancel, the permission timeout, the agent dying and the window closing answer
//   `cancelled`: the engine does that itself and this bridge's token fires, closing the prompt.
// - Auto-approval happens only when the user enabled `acp.permissions.autoApprove`, and then only
//   with an `allow_once` option, never `allow_always`.
//
// Architecture Invariant: this file does not import `vscode`; VS Code UI plugs in as a
// PermissionPrompter.

import { type CancellationToken, whenCancelled } from "../protocol/cancellation";
import type { Logger } from "../protocol/log";
import {
  ErrorCodes,
  type PermissionOption,
  type RequestPermissionOutcome,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  RequestError,
} from "../protocol/types";

export interface PromptItem {
  optionId: string;
  label: string;
  kind: PermissionOption["kind"];
  /** The item Escape stands for in a modal message (VS Code's `isCloseAffordance`). */
  isCloseAffordance: boolean;
}

export interface PermissionPromptModel {
  /** One line: what the agent wants to do. */
  message: string;
  /** More lines: kind, locations, input. */
  detail: string;
  items: PromptItem[];
  /** Too many options for dialog buttons: use a modal QuickPick instead. */
  useQuickPick: boolean;
}

/** The UI side. Resolves with the chosen optionId, or undefined when the user dismissed it. */
export interface PermissionPrompter {
  prompt(model: PermissionPromptModel, token: CancellationToken): Promise<string | undefined>;
}

export const MAX_DIALOG_BUTTONS = 4;

const KIND_LABEL: Record<string, string> = {
  allow_once: "allow once",
  allow_always: "allow always",
  reject_once: "reject once",
  reject_always: "reject always",
};

/** Checks the request's shape; throws InvalidParams when it cannot be prompted for. */
export function validateRequest(params: unknown): RequestPermissionRequest {
  const p = params as RequestPermissionRequest | undefined;
  if (!p || typeof p !== "object" || typeof p.sessionId !== "string") {
    throw new RequestError(ErrorCodes.InvalidParams, "session/request_permission: sessionId missing");
  }
  if (!p.toolCall || typeof p.toolCall !== "object" || typeof p.toolCall.toolCallId !== "string") {
    throw new RequestError(ErrorCodes.InvalidParams, "session/request_permission: toolCall missing");
  }
  if (!Array.isArray(p.options) || p.options.length === 0) {
    throw new RequestError(ErrorCodes.InvalidParams, "session/request_permission: no options to choose from");
  }
  const seen = new Set<string>();
  for (const o of p.options) {
    if (!o || typeof o.optionId !== "string" || typeof o.name !== "string" || !(o.kind in KIND_LABEL)) {
      throw new RequestError(ErrorCodes.InvalidParams, `session/request_permission: malformed option ${JSON.stringify(o)}`);
    }
    if (seen.has(o.optionId)) {
      throw new RequestError(ErrorCodes.InvalidParams, `session/request_permission: duplicate optionId ${o.optionId}`);
    }
    seen.add(o.optionId);
  }
  return p;
}

export function buildPromptModel(req: RequestPermissionRequest, maxButtons = MAX_DIALOG_BUTTONS): PermissionPromptModel {
  const tc = req.toolCall;
  const title = tc.title?.trim() || `tool call ${tc.toolCallId}`;
  const lines: string[] = [];
  if (tc.kind) lines.push(`Kind: ${tc.kind}`);
  for (const loc of tc.locations ?? []) lines.push(`Location: ${loc.path}${loc.line ? `:${loc.line}` : ""}`);
  for (const c of tc.content ?? []) {
    if (c.type === "diff") lines.push(`Edits: ${c.path}`);
    else if (c.type === "terminal") lines.push(`Terminal: ${c.terminalId}`);
    else if (c.type === "content" && c.content.type === "text") lines.push(clip(c.content.text, 300));
  }
  if (tc.rawInput !== undefined && tc.rawInput !== null) lines.push(`Input: ${clip(safeJson(tc.rawInput), 300)}`);
  const closeId = dismissalOptionId(req.options);
  const items = req.options.map((o) => ({
    optionId: o.optionId,
    label: o.name.trim() || KIND_LABEL[o.kind] || o.kind,
    kind: o.kind,
    isCloseAffordance: o.optionId === closeId,
  }));
  return {
    message: `The agent wants to: ${title}`,
    detail: lines.join("\n"),
    items,
    useQuickPick: items.length > maxButtons,
  };
}

/** The option a dismissal stands for: the first `reject_once`, if any. */
export function dismissalOptionId(options: PermissionOption[]): string | undefined {
  return options.find((o) => o.kind === "reject_once")?.optionId;
}

export function dismissalOutcome(options: PermissionOption[]): RequestPermissionOutcome {
  const id = dismissalOptionId(options);
  return id === undefined ? { outcome: "cancelled" } : { outcome: "selected", optionId: id };
}

/** The outcome for a choice the prompter returned; an id the agent did not offer is refused. */
export function outcomeForChoice(options: PermissionOption[], optionId: string | undefined): RequestPermissionOutcome {
  if (optionId === undefined) return dismissalOutcome(options);
  if (!options.some((o) => o.optionId === optionId)) {
    throw new Error(`chosen optionId ${JSON.stringify(optionId)} is not one the agent offered`);
  }
  return { outcome: "selected", optionId };
}

/** Auto-approval: the first `allow_once` option, if any. */
export function autoApproveOutcome(options: PermissionOption[]): RequestPermissionOutcome | undefined {
  const o = options.find((x) => x.kind === "allow_once");
  return o ? { outcome: "selected", optionId: o.optionId } : undefined;
}

export interface PermissionSettings {
  autoApprove: boolean;
}

export class PermissionBridge {
  constructor(
    private readonly prompter: PermissionPrompter,
    private readonly settings: () => PermissionSettings,
    private readonly log: Logger,
  ) {}

  async handle(params: unknown, token: CancellationToken): Promise<RequestPermissionResponse> {
    const req = validateRequest(params);
    if (token.isCancellationRequested) return { outcome: { outcome: "cancelled" } };
    if (this.settings().autoApprove) {
      const auto = autoApproveOutcome(req.options);
      if (auto) {
        this.log.info(`permission auto-approved (acp.permissions.autoApprove): ${JSON.stringify(auto)}`);
        return { outcome: auto };
      }
    }
    const model = buildPromptModel(req);
    const cancelled = whenCancelled(token).then(() => "cancelled" as const);
    const answer = await Promise.race([this.prompter.prompt(model, token).then((id) => ({ id })), cancelled]);
    if (answer === "cancelled" || token.isCancellationRequested) {
      this.log.info("permission prompt closed: request cancelled");
      return { outcome: { outcome: "cancelled" } };
    }
    try {
      const outcome = outcomeForChoice(req.options, answer.id);
      this.log.info(`permission answered: ${JSON.stringify(outcome)}${answer.id === undefined ? " (dialog dismissed)" : ""}`);
      return { outcome };
    } catch (e) {
      this.log.error(`permission prompt returned an invalid choice: ${(e as Error).message}; answering cancelled`);
      return { outcome: { outcome: "cancelled" } };
    }
  }
}

function clip(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max)}…`;
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}
