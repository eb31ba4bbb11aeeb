// A small, safe markdown renderer for agent text. Agent text is untrusted: it is parsed into a
// tree of a few known node kinds and turned into DOM with createElement/textContent only. No
// string of agent text is ever parsed as HTML; links keep only http(s)/mailto targets.
// Pure (no DOM) so it is tested under node.

export type Inline =
  | { t: "text"; text: string }
  | { t: "code"; text: string }
  | { t: "strong"; children: Inline[] }
  | { t: "em"; children: Inline[] }
  | { t: "link"; href: string; children: Inline[] };

export type Block =
  | { t: "p"; children: Inline[] }
  | { t: "h"; level: number; children: Inline[] }
  | { t: "pre"; lang: string; text: string }
  | { t: "ul"; items: Inline[][] }
  | { t: "ol"; start: number; items: Inline[][] }
  | { t: "quote"; children: Block[] }
  | { t: "hr" };

const SAFE_URL = /^(https?:|mailto:)/i;

export function safeHref(url: string): string | undefined {
  const u = url.trim();
  return SAFE_URL.test(u) ? u : undefined;
}

export function parseMarkdown(src: string): Block[] {
  const lines = src.replace(/\r\n?/g, "\n").split("\n");
  const out: Block[] = [];
  let i = 0;
  let para: string[] = [];
  const endPara = () => {
    if (para.length) out.push({ t: "p", children: parseInline(para.join("\n")) });
    para = [];
  };
  while (i < lines.length) {
    const line = lines[i]!;
    const fence = /^\s{0,3}(```+|~~~+)\s*([\w+.-]*)\s*$/.exec(line);
    if (fence) {
      endPara();
      const marker = fence[1]!;
      const body: string[] = [];
      i++;
      // An unclosed fence (still streaming) runs to the end of the text.
      while (i < lines.length && !lines[i]!.trimStart().startsWith(marker)) body.push(lines[i++]!);
      i++;
      out.push({ t: "pre", lang: fence[2] ?? "", text: body.join("\n") });
      continue;
    }
    const h = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (h) {
      endPara();
      out.push({ t: "h", level: h[1]!.length, children: parseInline(h[2]!) });
      i++;
      continue;
    }
    if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
      endPara();
      out.push({ t: "hr" });
      i++;
      continue;
    }
    if (/^\s{0,3}>/.test(line)) {
      endPara();
      const body: string[] = [];
      while (i < lines.length && /^\s{0,3}>/.test(lines[i]!)) body.push(lines[i++]!.replace(/^\s{0,3}>\s?/, ""));
      out.push({ t: "quote", children: parseMarkdown(body.join("\n")) });
      continue;
    }
    const ul = /^\s{0,3}[-*+]\s+(.*)$/.exec(line);
    const ol = /^\s{0,3}(\d{1,9})[.)]\s+(.*)$/.exec(line);
    if (ul || ol) {
      endPara();
      const items: Inline[][] = [];
      const re = ul ? /^\s{0,3}[-*+]\s+(.*)$/ : /^\s{0,3}\d{1,9}[.)]\s+(.*)$/;
      while (i < lines.length) {
        const m = re.exec(lines[i]!);
        if (m) {
          items.push(parseInline(m[1]!));
          i++;
        } else if (/^\s{2,}\S/.test(lines[i]!) && items.length) {
          // continuation line of the previous item
          const prev = items[items.length - 1]!;
          prev.push({ t: "text", text: " " }, ...parseInline(lines[i]!.trim()));
          i++;
        } else break;
      }
      out.push(ul ? { t: "ul", items } : { t: "ol", start: Number(ol![1]), items });
      continue;
    }
    if (line.trim() === "") {
      endPara();
      i++;
      continue;
    }
    para.push(line);
    i++;
  }
  endPara();
  return out;
}

export function parseInline(s: string): Inline[] {
  const out: Inline[] = [];
  let text = "";
  const flush = () => {
    if (text) out.push({ t: "text", text });
    text = "";
  };
  let i = 0;
  while (i < s.length) {
    const c = s[i]!;
    if (c === "\\" && i + 1 < s.length && /[\\`*_[\]()#+\-.!>~]/.test(s[i + 1]!)) {
      text += s[i + 1];
      i += 2;
      continue;
    }
    if (c === "`") {
      const run = /^`+/.exec(s.slice(i))![0];
      const end = s.indexOf(run, i + run.length);
      if (end > 0) {
        flush();
        out.push({ t: "code", text: s.slice(i + run.length, end).replace(/^ (.*) $/, "$1") });
        i = end + run.length;
        continue;
      }
    }
    if ((c === "*" || c === "_") && s[i + 1] === c) {
      const end = s.indexOf(c + c, i + 2);
      if (end > i + 2) {
        flush();
        out.push({ t: "strong", children: parseInline(s.slice(i + 2, end)) });
        i = end + 2;
        continue;
      }
    }
    if ((c === "*" || c === "_") && s[i + 1] !== " " && s[i + 1] !== undefined) {
      const end = s.indexOf(c, i + 1);
      if (end > i + 1 && s[end - 1] !== " ") {
        flush();
        out.push({ t: "em", children: parseInline(s.slice(i + 1, end)) });
        i = end + 1;
        continue;
      }
    }
    if (c === "[") {
      // The target may hold one level of balanced parentheses: [x](https://e.org/a_(b)).
      const m = /^\[([^\]\n]*)\]\(((?:[^()\s]|\([^()\s]*\))*)(?:\s+"[^"]*")?\)/.exec(s.slice(i));
      if (m) {
        flush();
        const href = safeHref(m[2]!);
        if (href) out.push({ t: "link", href, children: parseInline(m[1]!) });
        else out.push(...parseInline(m[1]!)); // unsafe target: keep the words, drop the link
        i += m[0].length;
        continue;
      }
    }
    text += c;
    i++;
  }
  flush();
  return out;
}

/** The minimal DOM surface the renderer needs (document in the webview, a fake in tests). */
export interface DomLike {
  createElement(tag: string): ElementLike;
  createTextNode(text: string): unknown;
}
export interface ElementLike {
  appendChild(child: unknown): unknown;
  setAttribute(name: string, value: string): void;
  textContent: string | null;
}

export function renderBlocks(doc: DomLike, blocks: Block[], parent: ElementLike): void {
  for (const b of blocks) parent.appendChild(renderBlock(doc, b));
}

function renderBlock(doc: DomLike, b: Block): ElementLike {
  switch (b.t) {
    case "p":
      return withInlines(doc, doc.createElement("p"), b.children);
    case "h":
      return withInlines(doc, doc.createElement(`h${Math.min(6, Math.max(1, b.level))}`), b.children);
    case "pre": {
      const pre = doc.createElement("pre");
      const code = doc.createElement("code");
      if (/^[\w+.-]+$/.test(b.lang)) code.setAttribute("data-lang", b.lang);
      code.textContent = b.text;
      pre.appendChild(code);
      return pre;
    }
    case "ul":
    case "ol": {
      const list = doc.createElement(b.t);
      if (b.t === "ol" && b.start !== 1) list.setAttribute("start", String(b.start));
      for (const item of b.items) list.appendChild(withInlines(doc, doc.createElement("li"), item));
      return list;
    }
    case "quote": {
      const q = doc.createElement("blockquote");
      renderBlocks(doc, b.children, q);
      return q;
    }
    case "hr":
      return doc.createElement("hr");
  }
}

function withInlines(doc: DomLike, el: ElementLike, inlines: Inline[]): ElementLike {
  for (const n of inlines) el.appendChild(renderInline(doc, n));
  return el;
}

function renderInline(doc: DomLike, n: Inline): unknown {
  switch (n.t) {
    case "text":
      return doc.createTextNode(n.text);
    case "code": {
      const c = doc.createElement("code");
      c.textContent = n.text;
      return c;
    }
    case "strong":
      return withInlines(doc, doc.createElement("strong"), n.children);
    case "em":
      return withInlines(doc, doc.createElement("em"), n.children);
    case "link": {
      const a = doc.createElement("a");
      a.setAttribute("href", n.href);
      a.setAttribute("title", n.href);
      return withInlines(doc, a, n.children);
    }
  }
}
