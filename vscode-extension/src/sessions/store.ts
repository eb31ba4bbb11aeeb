// The saved conversations of one workspace: each is acp-client's thread in its saved form
// (`Thread.toJson()`, versioned, FORMAT 1) in its own file under the extension's workspace
// storage (StoreFiles: a directory on Node, the workspace state in the browser), plus an index (`index.json`: session id, agent, title, dates, size) for the history
// list. Bounded: at most MAX_SESSIONS conversations and MAX_TOTAL_BYTES of saved threads (the
// least recently updated are deleted past either); one thread is at most what the thread model
// keeps (its own byte limit). A file that cannot be read (truncated, another version, not
// ours) is skipped and reported once, never fatal; writes go to a temporary file renamed over.
//
// Architecture Invariant: this file does not import `vscode`.

import type { StoreFiles } from "../platform/storeFiles";
// The UTF-8 length without encoding (the trace model's, shared: the recorder counts with it too).
import { utf8Length } from "../../../trace-viewer/model.js";

export const MAX_SESSIONS = 50;
export const MAX_TOTAL_BYTES = 32 * 1024 * 1024;
const INDEX_FORMAT = 1;

/** One saved conversation, as the history list shows it. */
export interface SessionRecord {
  /** The session's id as the agent knows it. */
  sessionId: string;
  /** The agent's name (`acp.agents` / the demo agent) it was held with. */
  agent: string;
  /** The agent's title and version (initialize's agentInfo), for the list. */
  agentTitle: string;
  /** The list title: the agent's `session_info_update` title, else the first prompt's first line
   *  (acp-client's `list_title`, through the session engine). */
  title: string;
  createdAt: number;
  updatedAt: number;
  /** Bytes of the saved thread. */
  bytes: number;
}

interface IndexFile {
  format: number;
  sessions: SessionRecord[];
}

export class SessionStore {
  private index: SessionRecord[] | undefined;
  /** Problems met reading (each reported once by the caller). */
  readonly problems: string[] = [];

  constructor(
    readonly files: StoreFiles,
    private readonly now: () => number = Date.now,
  ) {}

  /** The saved conversations, most recently updated first. */
  list(): SessionRecord[] {
    return [...this.load()].sort((a, b) => b.updatedAt - a.updatedAt);
  }

  find(sessionId: string): SessionRecord | undefined {
    return this.load().find((r) => r.sessionId === sessionId);
  }

  /** The saved thread's JSON text, or undefined (missing or unreadable: reported in problems). */
  thread(sessionId: string): string | undefined {
    try {
      return this.files.readThread(sessionId);
    } catch (e) {
      this.problems.push(`saved conversation ${sessionId}: ${(e as Error).message}`);
      return undefined;
    }
  }

  /** Saves (or updates) a conversation; `title` is its list title (the session engine's, acp-client's
   *  `list_title`, the same as `acp sessions` shows). */
  save(r: { sessionId: string; agent: string; agentTitle: string; title: string }, savedJson: string): SessionRecord {
    this.files.writeThread(r.sessionId, savedJson);
    const index = this.load();
    const now = this.now();
    const old = index.find((x) => x.sessionId === r.sessionId);
    const rec: SessionRecord = {
      sessionId: r.sessionId,
      agent: r.agent,
      agentTitle: r.agentTitle,
      title: r.title,
      createdAt: old?.createdAt ?? now,
      updatedAt: Math.max(now, (old?.updatedAt ?? 0) + 1),
      bytes: utf8Length(savedJson),
    };
    this.index = [rec, ...index.filter((x) => x.sessionId !== r.sessionId)];
    this.prune();
    this.writeIndex();
    return rec;
  }

  /** Forgets a conversation. */
  remove(sessionId: string): void {
    this.index = this.load().filter((x) => x.sessionId !== sessionId);
    this.files.removeThread(sessionId);
    this.writeIndex();
  }

  private prune(): void {
    const sorted = this.list();
    let total = 0;
    const keep: SessionRecord[] = [];
    for (const r of sorted) {
      if (keep.length < MAX_SESSIONS && total + r.bytes <= MAX_TOTAL_BYTES) {
        keep.push(r);
        total += r.bytes;
      } else {
        this.files.removeThread(r.sessionId);
      }
    }
    this.index = keep;
  }

  private load(): SessionRecord[] {
    if (this.index) return this.index;
    this.index = [];
    let text: string | undefined;
    try {
      text = this.files.readIndex();
    } catch (e) {
      this.problems.push(`the saved sessions' index is unreadable (${(e as Error).message}); starting a new one`);
      return this.index;
    }
    if (text === undefined) return this.index; // nothing saved yet
    try {
      const parsed = JSON.parse(text) as IndexFile;
      if (parsed.format !== INDEX_FORMAT || !Array.isArray(parsed.sessions)) throw new Error(`format ${String(parsed.format)}`);
      this.index = parsed.sessions.filter(
        (r) => r && typeof r.sessionId === "string" && typeof r.agent === "string" && typeof r.updatedAt === "number",
      );
    } catch (e) {
      this.problems.push(`the saved sessions' index is unreadable (${(e as Error).message}); starting a new one`);
    }
    return this.index;
  }

  private writeIndex(): void {
    this.files.writeIndex(JSON.stringify({ format: INDEX_FORMAT, sessions: this.index ?? [] } satisfies IndexFile));
  }
}

// ---- the history list's entries ------------------------------------------------------------

/** A session the history can open: saved here, or only known to the agent. */
export interface HistoryEntry {
  sessionId: string;
  title: string;
  agent: string;
  agentTitle: string;
  updatedAt: number | undefined;
  saved: boolean;
}

export function entriesFrom(
  saved: SessionRecord[],
  agentList: Array<{ sessionId: string; title?: string | null; updatedAt?: string | null }>,
  agent: { name: string; title: string },
): HistoryEntry[] {
  const out: HistoryEntry[] = saved.map((r) => ({ ...r, saved: true }));
  for (const s of agentList) {
    if (out.some((e) => e.sessionId === s.sessionId)) continue;
    const t = s.updatedAt ? Date.parse(s.updatedAt) : NaN;
    out.push({
      sessionId: s.sessionId,
      title: s.title?.trim() ? s.title.trim() : "(untitled)",
      agent: agent.name,
      agentTitle: agent.title,
      updatedAt: Number.isFinite(t) ? t : undefined,
      saved: false,
    });
  }
  return out.sort((a, b) => (b.updatedAt ?? 0) - (a.updatedAt ?? 0));
}

export function when(ms: number | undefined): string {
  if (ms === undefined) return "";
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}
