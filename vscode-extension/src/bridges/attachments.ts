// A prompt's attachments (files and symbols mentioned with `@`, the editor's selection, pasted
// images) turned into content blocks. Which block each becomes (an embedded resource, a
// resource link, text, an image) or whether it is refused is acp-client's decision
// (`attachToPrompt`, tests/client/prompt.json), from the agent's `promptCapabilities`; this
// file only gathers the facts it needs (the file's text when it is small enough to embed: the
// open buffer first, else at most maxEmbedBytes + 1 bytes of the file) and keeps the order.
//
// Architecture Invariant: this file does not import `vscode`.

import { hostPaths } from "../platform/hostPaths";
import type { HostFiles } from "../platform/hostFiles";
import type { ContentBlock } from "@agentclientprotocol/sdk";
import type { ClientPolicy, PromptAttachment } from "../protocol/policy";

import type { ViewAttachment } from "../webview/messages";
export type { ViewAttachment };

export interface PromptParts {
  blocks: ContentBlock[];
  /** Why attachments were not sent (nothing is sent then: the user decides). */
  refused: string[];
}

/** Checks an attachment from the view; throws naming what is wrong. */
export function validAttachment(a: unknown): ViewAttachment {
  const o = a as Record<string, unknown> | null;
  const str = (k: string) => {
    if (typeof o?.[k] !== "string") throw new Error(`attachment: ${k} must be a string`);
    return o[k] as string;
  };
  const abs = () => {
    const p = str("path");
    if (!hostPaths().isAbsolute(p)) throw new Error(`attachment: path must be absolute: ${p}`);
    return p;
  };
  const int = (v: unknown, k: string) => {
    if (typeof v !== "number" || !Number.isInteger(v) || v < 0) throw new Error(`attachment: ${k} must be a line number`);
    return v;
  };
  switch (o?.kind) {
    case "file":
      return { kind: "file", path: abs(), name: str("name") };
    case "symbol":
      return { kind: "symbol", path: abs(), name: str("name"), line: int(o.line, "line") };
    case "selection": {
      const l = o.lines as { start?: unknown; end?: unknown } | undefined;
      return {
        kind: "selection",
        path: abs(),
        name: str("name"),
        lines: { start: int(l?.start, "lines.start"), end: int(l?.end, "lines.end") },
        text: str("text"),
        language: typeof o.language === "string" ? o.language : undefined,
      };
    }
    case "image":
      return { kind: "image", name: str("name"), mimeType: str("mimeType"), data: str("data") };
    default:
      throw new Error(`attachment: unknown kind ${JSON.stringify(o?.kind)}`);
  }
}

/** The file's size and, when it is text of at most `max` bytes, its text (null otherwise). */
export async function readForPrompt(
  files: HostFiles,
  file: string,
  max: number,
  openText?: string,
): Promise<{ size?: number; text: string | null }> {
  if (openText !== undefined) return { size: new TextEncoder().encode(openText).length, text: openText };
  return files.readForPrompt(file, max);
}

/** The prompt's blocks: the text, then each attachment as acp-client decides. */
export async function promptParts(
  text: string,
  attachments: readonly ViewAttachment[],
  caps: unknown,
  policy: ClientPolicy,
  files: HostFiles,
  openText: (file: string) => string | undefined = () => undefined,
): Promise<PromptParts> {
  const blocks: ContentBlock[] = [];
  const refused: string[] = [];
  if (text) blocks.push({ type: "text", text });
  const limits = attachments.some((a) => a.kind === "file") ? policy.promptLimits() : undefined;
  for (const a of attachments) {
    let input: PromptAttachment;
    if (a.kind === "image") input = a;
    else {
      const uri = files.fileUrl(a.path);
      if (a.kind === "file") {
        let facts: { size?: number; text: string | null };
        try {
          facts = await readForPrompt(files, a.path, limits!.maxEmbedBytes, openText(a.path));
        } catch (e) {
          refused.push(`${a.name} not sent: ${(e as Error).message}`);
          continue;
        }
        input = { kind: "file", uri, name: a.name, size: facts.size, text: facts.text };
      } else if (a.kind === "symbol") input = { kind: "symbol", uri, name: a.name, line: a.line };
      else input = { kind: "selection", uri, name: a.name, lines: a.lines, text: a.text, language: a.language };
    }
    const d = policy.attachToPrompt(caps, input);
    if ("refuse" in d) refused.push(d.refuse);
    else blocks.push(d.block as ContentBlock);
  }
  return { blocks, refused };
}
