// Permission requests: turning the agent's `session/request_permission` into a prompt built
// from the agent's own options, and the user's answer back into a validated outcome.
//
// What is answered without asking, and what a dismissed question answers, is decided by
// acp-client (through the wasm engine: ClientPolicy; tests/client/permission.json is the case
// table), never here:
// - Auto-approval (`acp.permissions.autoApprove`) picks `allow_once`, never `allow_always`; when
//   the agent offers no `allow_once`, the user is asked.
// - No options: nothing can be chosen, so the turn is cancelled: `session/cancel` is sent for the
//   session first (once per turn), then the request is answered `cancelled`.
// - Dismissing the dialog (Escape / close) answers the agent's `reject_once` option (the user
//   did not approve this call; the turn goes on), else the turn is cancelled as above.
//   `reject_always` is never chosen implicitly.
// - session/cancel, the permission timeout, the agent dying and the window closing answer
//   `cancelled`: the engine does that itself and this bridge's token fires, closing the prompt.
// The dialog offers exactly the agent's options, in the agent's order. Its text is acp-client's
// question model (ClientPolicy.permissionQuestion; tests/client/question.json): the title, the
// options' names, the tool's further lines and the change as a unified diff, every agent string
// escaped onto a bounded line; a long diff is cut ("… N more lines") and Review changes opens
// all of it. Nothing of that rule is written here: this file only lays the model out.
//
// Architecture Invariant: this file does not import `vscode`; VS Code UI plugs in as a
// PermissionPrompter.

import type {
  PermissionOption,
  RequestPermissionOutcome,
  RequestPermissionRequest,
  RequestPermissionResponse,
} from "@agentclientprotocol/sdk";
import { type CancellationToken, whenCancelled } from "../protocol/cancellation";
import { JsonRpc, RequestError } from "../protocol/errors";
import type { Logger } from "../protocol/log";
import type { ClientPolicy, PermissionDecision, PermissionQuestion } from "../protocol/policy";

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
  /** The session that asks (the conversation a notification names). */
  sessionId?: string;
  /** More lines: kind, locations, input. */
  detail: string;
  items: PromptItem[];
  /** Too many options for dialog buttons: use a modal QuickPick instead. */
  useQuickPick: boolean;
  /** The edits the tool call proposes (from the request, else the conversation's tool call):
   *  the prompter offers to review them before answering. */
  diffs: ProposedEdit[];
}

/** A diff a tool call carries: the file, its text before (null: a new file) and after. */
export interface ProposedEdit {
  path: string;
  oldText: string | null;
  newText: string;
}

/** The UI side. Resolves with the chosen optionId, or undefined when the user dismissed it. */
export interface PermissionPrompter {
  prompt(model: PermissionPromptModel, token: CancellationToken): Promise<string | undefined>;
}

export const MAX_DIALOG_BUTTONS = 4;

/** Checks the request's shape; throws InvalidParams when it cannot be answered. An empty
 *  `options` is valid: the answer is then `cancelled` (acp-client's rule). */
export function validateRequest(params: unknown): RequestPermissionRequest {
  const p = params as RequestPermissionRequest | undefined;
  if (!p || typeof p !== "object" || typeof p.sessionId !== "string") {
    throw new RequestError(JsonRpc.InvalidParams, "session/request_permission: sessionId missing");
  }
  if (!p.toolCall || typeof p.toolCall !== "object" || typeof p.toolCall.toolCallId !== "string") {
    throw new RequestError(JsonRpc.InvalidParams, "session/request_permission: toolCall missing");
  }
  if (!Array.isArray(p.options)) {
    throw new RequestError(JsonRpc.InvalidParams, "session/request_permission: options must be an array");
  }
  const seen = new Set<string>();
  for (const o of p.options) {
    if (!o || typeof o.optionId !== "string" || typeof o.name !== "string" || typeof o.kind !== "string") {
      throw new RequestError(JsonRpc.InvalidParams, `session/request_permission: malformed option ${JSON.stringify(o)}`);
    }
    if (seen.has(o.optionId)) {
      throw new RequestError(JsonRpc.InvalidParams, `session/request_permission: duplicate optionId ${o.optionId}`);
    }
    seen.add(o.optionId);
  }
  return p;
}

/** What the conversation knows of a tool call: acp-client's saved tool entry (`title`, `kind`,
 *  `locations`, `content`, `rawInput`: the fields acp-client's question reads), as `acp chat`
 *  passes its thread's. */
export type KnownToolCall = { content?: unknown } & Record<string, unknown>;

/** The diffs among a tool call's content items (the texts Review changes opens). */
export function editsOf(content: unknown): ProposedEdit[] {
  const edits: ProposedEdit[] = [];
  for (const c of Array.isArray(content) ? (content as Array<Record<string, unknown>>) : [])
    if (c?.type === "diff" && typeof c.path === "string" && typeof c.newText === "string")
      edits.push({ path: c.path, oldText: typeof c.oldText === "string" ? c.oldText : null, newText: c.newText });
  return edits;
}

/** The diffs a request's tool call carries itself. */
export function requestEdits(req: RequestPermissionRequest): ProposedEdit[] {
  return editsOf(req.toolCall.content);
}

/** The modal's detail: the question's further lines, then each diff's path and summary and the
 *  lines the question shows, and `… N more lines` with `hint` (how this face shows the rest). */
export function questionDetail(q: PermissionQuestion, hint = ""): string {
  const lines = [...q.detail];
  for (const d of q.diffs) {
    if (lines.length > 0) lines.push("");
    lines.push(`${d.path} (${d.summary})`, ...d.lines.slice(0, d.shown));
    if (d.hidden > 0) lines.push(`… ${d.hidden} more lines${hint}`);
  }
  return lines.join("\n");
}

/** The prompt for acp-client's question `q` (every string in it already escaped, one line
 *  each). `edits`: the texts Review changes opens; `closeId`: the option a dismissal answers
 *  (the close affordance), from acp-client's `dismissedPermission`. */
export function promptModel(
  q: PermissionQuestion,
  edits: ProposedEdit[] = [],
  closeId?: string,
  maxButtons = MAX_DIALOG_BUTTONS,
): PermissionPromptModel {
  const items = q.options.map((o) => ({
    optionId: o.optionId,
    label: plainLabel(o.name, o.kind),
    kind: o.kind as PermissionOption["kind"],
    isCloseAffordance: o.optionId === closeId,
  }));
  return {
    message: `The agent wants to: ${q.title}`,
    detail: questionDetail(q, edits.length > 0 ? " (Review changes shows the whole change)" : ""),
    items,
    useQuickPick: items.length > maxButtons,
    diffs: edits,
  };
}

/** An option's label: an "always" option says what it persists (the agent keeps the choice
 *  and stops asking), the others are the agent's words. */
export function plainLabel(name: string, kind: string): string {
  if (kind === "allow_always") return `${name} (the agent remembers: it will not ask again)`;
  if (kind === "reject_always") return `${name} (the agent remembers: it will refuse without asking)`;
  return name;
}

/** The outcome for a choice the prompter returned; an id the agent did not offer is refused. */
export function outcomeForChoice(options: PermissionOption[], optionId: string): RequestPermissionOutcome {
  if (!options.some((o) => o.optionId === optionId)) {
    throw new Error(`chosen optionId ${JSON.stringify(optionId)} is not one the agent offered`);
  }
  return { outcome: "selected", optionId };
}

export interface PermissionSettings {
  autoApprove: boolean;
}

export class PermissionBridge {
  constructor(
    private readonly prompter: PermissionPrompter,
    private readonly settings: () => PermissionSettings,
    private readonly log: Logger,
    private readonly policy: ClientPolicy,
    /** Sends `session/cancel` for the session (once per turn), before a `cancelled` answer. */
    private readonly cancelTurn: (sessionId: string) => void,
    /** The conversation's tool call (a request's own `toolCall` is an update that often
     *  carries only a title: the diff came with the earlier `tool_call`), or null. */
    private readonly toolCallFor: (sessionId: string, toolCallId: string) => KnownToolCall | null = () => null,
  ) {}

  /** A v2 connection's question (`title`, no `toolCall`), read as v1's by acp-client. */
  handleV2(params: unknown, token: CancellationToken): Promise<RequestPermissionResponse> {
    return this.handle(this.policy.permissionAsV1(params), token);
  }

  async handle(params: unknown, token: CancellationToken): Promise<RequestPermissionResponse> {
    const req = validateRequest(params);
    if (token.isCancellationRequested) return { outcome: { outcome: "cancelled" } };
    const mode = this.settings().autoApprove ? "allow_once" : "ask";
    const decided = this.policy.decidePermission(req.options, mode);
    if (decided.answer !== "ask") return this.answer(req, decided, `automatic (${mode})`);
    const dismissal = this.policy.dismissedPermission(req.options);
    // A request's toolCall is an update: what it leaves out (often the diff) is the
    // conversation's tool call's, as acp-client's question takes it.
    const known = this.toolCallFor(req.sessionId, req.toolCall.toolCallId);
    const edits = req.toolCall.content != null ? requestEdits(req) : editsOf(known?.content);
    const question = this.policy.permissionQuestion(req, known);
    const model = promptModel(question, edits, dismissal.answer === "select" ? dismissal.optionId : undefined);
    const cancelled = whenCancelled(token).then(() => "cancelled" as const);
    const answer = await Promise.race([
      this.prompter.prompt({ ...model, sessionId: req.sessionId }, token).then((id) => ({ id })),
      cancelled,
    ]);
    if (answer === "cancelled" || token.isCancellationRequested) {
      this.log.info("permission prompt closed: request cancelled");
      return { outcome: { outcome: "cancelled" } };
    }
    if (answer.id === undefined) return this.answer(req, dismissal, "dialog dismissed");
    try {
      const outcome = outcomeForChoice(req.options, answer.id);
      this.log.info(`permission answered: ${JSON.stringify(outcome)}`);
      return { outcome };
    } catch (e) {
      this.log.error(`permission prompt returned an invalid choice: ${(e as Error).message}; answering as dismissed`);
      return this.answer(req, dismissal, "invalid choice");
    }
  }

  /** Answers a decision made without the user's pick. */
  private answer(req: RequestPermissionRequest, d: PermissionDecision, why: string): RequestPermissionResponse {
    if (d.answer === "select") {
      this.log.info(`permission answered ${d.optionId} (${d.kind}): ${why}`);
      return { outcome: { outcome: "selected", optionId: d.optionId } };
    }
    const reason = d.answer === "cancelled" ? d.reason : "ask";
    this.log.info(`permission answered cancelled (${reason}): ${why}; sending session/cancel first`);
    this.cancelTurn(req.sessionId);
    return { outcome: { outcome: "cancelled" } };
  }
}
