// The prompt queue as the chat shows it, above the prompt: each prompt waiting for the turn to
// end on one line, with Edit (the text in a box: Enter saves, Escape leaves it) and Remove; when
// the queue is held (the turn was cancelled or failed), a line saying so with Send next and
// Clear. It renders what the host says (acp-client's queue) and asks the host for every change.
// Text is set with textContent only.

import type { QueueAction, QueueItem } from "./messages";

export class QueueView {
  /** The prompt being edited (its box keeps focus across re-renders). */
  private editing: { id: number; box: HTMLTextAreaElement } | undefined;
  private items: QueueItem[] = [];

  constructor(
    private readonly root: HTMLElement,
    private readonly act: (a: QueueAction) => void,
  ) {
    root.id = "queue";
    root.setAttribute("role", "list");
    root.setAttribute("aria-label", "Queued prompts");
  }

  /** The queue as the host has it now. */
  show(items: QueueItem[], held: boolean): void {
    this.items = items;
    if (this.editing && !items.some((i) => i.id === this.editing!.id)) this.editing = undefined;
    const rows: HTMLElement[] = [];
    if (items.length) {
      const head = el("div", "queue-head");
      head.append(
        el("span", "queue-title", held ? `Queue held: ${items.length} waiting` : `${items.length} queued: sent when the turn ends`),
      );
      if (held) head.append(button("Send next", "play", () => this.act({ action: "sendHeld" })));
      head.append(button("Clear", "clear-all", () => this.act({ action: "clear" })));
      rows.push(head);
    }
    for (const item of items) rows.push(this.row(item));
    this.root.replaceChildren(...rows);
    this.root.classList.toggle("held", held);
    if (this.editing) this.editing.box.focus();
  }

  /** The prompts waiting. */
  get length(): number {
    return this.items.length;
  }

  private row(item: QueueItem): HTMLElement {
    const row = el("div", "queue-item");
    row.setAttribute("role", "listitem");
    row.dataset.id = String(item.id);
    if (this.editing?.id === item.id) {
      const box = this.editing.box;
      row.append(
        box,
        button("Save", "check", () => this.save(item.id)),
      );
      return row;
    }
    const label = el("span", "queue-text", item.text);
    label.title = item.text;
    row.append(label);
    if (item.attachments) row.append(el("span", "queue-attachments", `+${item.attachments}`));
    row.append(
      button("Edit", "edit", () => this.edit(item)),
      button("Remove", "close", () => this.act({ action: "remove", id: item.id })),
    );
    return row;
  }

  private edit(item: QueueItem): void {
    const box = document.createElement("textarea");
    box.className = "queue-edit";
    box.rows = 2;
    box.value = item.text;
    box.setAttribute("aria-label", "Edit the queued prompt (Enter saves, Escape cancels)");
    box.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        this.save(item.id);
      } else if (e.key === "Escape") {
        e.preventDefault();
        e.stopPropagation();
        this.editing = undefined;
        this.show(this.items, this.root.classList.contains("held"));
      }
    });
    this.editing = { id: item.id, box };
    this.show(this.items, this.root.classList.contains("held"));
  }

  private save(id: number): void {
    const text = this.editing?.box.value.trim() ?? "";
    this.editing = undefined;
    // An emptied prompt is removed (the queue refuses empty text).
    this.act(text ? { action: "edit", id, text } : { action: "remove", id });
  }
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function button(label: string, icon: string, onClick: () => void): HTMLButtonElement {
  const b = el("button", "icon secondary");
  b.title = label;
  b.setAttribute("aria-label", label);
  const i = el("i", `codicon codicon-${icon}`);
  i.setAttribute("aria-hidden", "true");
  b.append(i);
  b.addEventListener("click", onClick);
  return b;
}
