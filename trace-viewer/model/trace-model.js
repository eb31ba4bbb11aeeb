// The index over a trace's lines: names, pending requests, rows, turns, and the answers to the viewer's questions (the server's index.rs and query.rs); the viewer's source over a model.

import { linePreview, messageOf, preview } from "./detail.js";
import { laneName, lanes, malformed, message, parseLine } from "./line.js";
import {
  AGENT,
  CANCEL,
  CLIENT,
  CUT,
  CUT_PREFIX,
  ERROR,
  K,
  KINDS,
  MAX_DETAIL,
  MAX_LANES,
  MAX_LINE,
  MAX_LISTED,
  MAX_NAME,
  MAX_PENDING,
  MAX_TURNS,
  NAMES_LIMIT,
  NONE,
  utf8Length,
  utf8Prefix,
} from "./text.js";

function cutName(s) {
  return utf8Prefix(s, MAX_NAME);
}

class Names {
  constructor() {
    this.names = [""];
    this.ids = new Map();
  }
  intern(name) {
    name = cutName(name);
    const id = this.ids.get(name);
    if (id !== undefined) return id;
    if (this.names.length >= NAMES_LIMIT) return NAMES_LIMIT;
    this.names.push(name);
    this.ids.set(name, this.names.length - 1);
    return this.names.length - 1;
  }
  get(id) {
    if (id === 0) return null;
    if (id === NAMES_LIMIT) return "…";
    return this.names[id] ?? null;
  }
  find(name) {
    return this.ids.get(cutName(name));
  }
  all() {
    return this.names.slice(1);
  }
}

class Pending {
  constructor() {
    this.rows = new Map();
    this.order = [];
    this.next = 0;
  }
  insert(key, row) {
    const seq = this.next++;
    this.rows.set(key, [row, seq]);
    this.order.push([seq, key]);
    while (this.rows.size > MAX_PENDING) {
      const [s, k] = this.order.shift();
      if (this.rows.get(k)?.[1] === s) this.rows.delete(k);
    }
    if (this.order.length > 4 * MAX_PENDING) this.order = this.order.filter(([s, k]) => this.rows.get(k)?.[1] === s);
  }
  remove(key) {
    const e = this.rows.get(key);
    if (e === undefined) return undefined;
    this.rows.delete(key);
    return e[0];
  }
}

const keyOf = (from, to, id) => `${from}\u0000${to}\u0000${id}`;
const connKey = (a, b) => `${Math.min(a, b)},${Math.max(a, b)}`;
const awaitKey = (from, to, session) => `${from},${to},${session}`;
/** The stop reason of a v2 turn whose idle state_update gave none (index.rs `ENDED`). */
const ENDED = "ended";

export class TraceModel {
  /** @param {{maxLine?: number, maxRows?: number, file?: string}} [o] */
  constructor(o = {}) {
    this.maxLine = o.maxLine ?? MAX_LINE;
    this.maxRows = o.maxRows ?? 1 << 20;
    this.file = o.file ?? "";
    this.generation = 0;
    this.restarted = null;
    this.clear();
  }

  clear() {
    this.rows = [];
    this.turns = [];
    this.methods = new Names();
    this.subs = new Names();
    this.sessions = new Names();
    this.lanes = [];
    this.bytes = new Map();
    this.text = [];
    this.readTo = 0;
    this.tail = "";
    this.lines = 0;
    this.malformed = 0;
    this.firstMalformed = null;
    this.capped = null;
    this.open = new Map();
    this.turnCount = new Map();
    this.pending = new Pending();
    // Per connection (lanes, lower first): its version (0 while unknown) and initialize count.
    this.conns = new Map();
    // v2 turns an idle state_update may close: prompt lanes and session -> [turn, epoch].
    this.awaiting = new Map();
    this.state = { lastArrow: undefined };
  }

  /** Starts again (what was fed is forgotten); `why` is shown. */
  reset(why) {
    this.clear();
    this.generation++;
    this.restarted = why ?? null;
  }

  /** Bytes taken so far (complete lines and the incomplete one). */
  fed() {
    return this.readTo + utf8Length(this.tail);
  }

  /** Text of the file, in any pieces. */
  addText(chunk) {
    let start = 0;
    for (;;) {
      if (this.capped) return;
      const nl = chunk.indexOf("\n", start);
      if (nl < 0) {
        this.tail += chunk.slice(start);
        return;
      }
      const line = this.tail + chunk.slice(start, nl);
      this.tail = "";
      this.addLine(line);
      start = nl + 1;
    }
  }

  /** One complete line (without its line break). `cutFrom`: the line was this many bytes
   *  long and `line` is its start (the extension keeps at most so much of a line). */
  addLine(line, cutFrom) {
    if (this.capped) return;
    const len = cutFrom ?? utf8Length(line);
    let cut = cutFrom !== undefined;
    let text = line;
    if (len > this.maxLine) {
      cut = true;
      text = utf8Prefix(line, Math.min(CUT_PREFIX, this.maxLine));
    }
    const lineNo = this.lines + 1;
    const offset = this.readTo;
    const parsed = [];
    parseLine(text, cut, this.state, parsed);
    if (this.rows.length + parsed.length > this.maxRows) {
      this.capped = { line: lineNo, offset };
      return;
    }
    this.lines = lineNo;
    this.readTo = offset + len + 1;
    const index = this.text.length;
    this.text.push(text);
    for (const p of parsed) this.add(p, index, len, lineNo, offset);
  }

  lane(name) {
    if (name === undefined) return NONE;
    let i = this.lanes.indexOf(name);
    if (i >= 0) return i;
    if (this.lanes.length >= MAX_LANES) return NONE;
    this.lanes.push(cutName(name));
    return this.lanes.length - 1;
  }

  add(p, index, len, lineNo, offset) {
    const n = this.rows.length;
    const kind = p.kind ?? K.malformed;
    if (kind === K.malformed) {
      this.malformed++;
      if (this.firstMalformed === null) this.firstMalformed = lineNo;
    }
    const from = this.lane(p.from);
    const to = this.lane(p.to);
    const t = typeof p.t === "number" && Number.isFinite(p.t) ? p.t : NaN;
    const row = {
      text: index,
      offset,
      t,
      len,
      line: lineNo,
      pair: NONE,
      turn: NONE,
      method: p.method !== undefined ? this.methods.intern(p.method) : 0,
      sub: p.sub !== undefined ? this.subs.intern(p.sub) : 0,
      session: p.session !== undefined ? this.sessions.intern(p.session) : 0,
      entry: p.entry ?? 0,
      from,
      to,
      kind,
      flags: (p.error ? ERROR : 0) | (p.cancel ? CANCEL : 0) | (p.cut ? CUT : 0),
    };
    if (from !== NONE && to !== NONE) {
      const bytes = p.cut && !p.bytes ? len : (p.bytes ?? 0);
      const k = `${from},${to}`;
      const e = this.bytes.get(k) ?? [from, to, 0, 0];
      e[2] += bytes;
      e[3] += 1;
      this.bytes.set(k, e);
    }
    const id = p.id !== undefined ? cutName(p.id) : undefined;
    const both = from !== NONE && to !== NONE;
    const conn = connKey(from, to);
    if (kind === K.request || kind === K.notification) {
      if (both && kind === K.request && p.method === "initialize") {
        const c = this.conn(conn);
        c.version = 0;
        c.epoch = (c.epoch + 1) >>> 0;
      }
      if (row.session !== 0) {
        if (kind === K.request && p.method === "session/prompt") {
          const count = (this.turnCount.get(row.session) ?? 0) + 1;
          this.turnCount.set(row.session, count);
          this.turns.push({ session: row.session, n: count, start: n, end: NONE, stop: 0 });
          const t = this.turns.length - 1;
          this.open.set(row.session, t);
          const c = this.conns.get(conn) ?? { version: 0, epoch: 0 };
          const key = awaitKey(from, to, row.session);
          if (both && c.version !== 1 && (this.awaiting.size < MAX_PENDING || this.awaiting.has(key))) this.awaiting.set(key, [t, c.epoch]);
        }
        const t = this.open.get(row.session);
        if (t !== undefined) row.turn = t;
        if (both && (p.v2Sign || p.idle)) this.v2Update(p, conn, from, to, row.session, n);
      }
      if (kind === K.request && id !== undefined && from !== NONE && to !== NONE) this.pending.insert(keyOf(from, to, id), n);
    } else if (kind === K.response || kind === K.error) {
      if (id !== undefined && from !== NONE && to !== NONE) {
        const req = this.pending.remove(keyOf(to, from, id));
        if (req !== undefined) this.answer(row, req, n, p);
      }
    }
    this.rows.push(row);
  }

  conn(key) {
    let c = this.conns.get(key);
    if (c === undefined) {
      c = { version: 0, epoch: 0 };
      this.conns.set(key, c);
    }
    return c;
  }

  /** A v2 sign (index.rs `v2_update`): an unknown connection is v2; an idle state_update closes the turn its prompt opened the other way. */
  v2Update(p, conn, from, to, session, n) {
    const c = this.conn(conn);
    if (c.version === 0) c.version = 2;
    if (c.version !== 2 || !p.idle) return;
    const key = awaitKey(to, from, session);
    const e = this.awaiting.get(key);
    if (e === undefined) return;
    this.awaiting.delete(key);
    const [t, epoch] = e;
    if (epoch !== c.epoch || this.turns[t].end !== NONE) return;
    this.close(t, n, this.subs.intern(p.stop ?? ENDED));
  }

  close(t, n, stop) {
    const turn = this.turns[t];
    turn.end = n;
    turn.stop = stop;
    if (this.open.get(turn.session) === t) this.open.delete(turn.session);
  }

  answer(row, req, n, p) {
    const request = this.rows[req];
    request.pair = n;
    request.flags |= row.flags & (ERROR | CANCEL);
    row.pair = req;
    if (row.method === 0) row.method = request.method;
    if (row.session === 0) row.session = request.session;
    row.turn = request.turn;
    const conn = connKey(request.from, request.to);
    const error = row.kind === K.error;
    if (!error && request.method !== 0 && this.methods.get(request.method) === "initialize")
      this.conn(conn).version = p.version === 2 ? 2 : 1;
    if (request.turn === NONE) return;
    const turn = this.turns[request.turn];
    if (turn.start !== req || turn.end !== NONE) return;
    const version = this.conns.get(conn)?.version ?? 0;
    if (error || version === 1 || (version === 0 && p.stop !== undefined)) {
      this.awaiting.delete(awaitKey(request.from, request.to, request.session));
      this.close(request.turn, n, error ? this.subs.intern("error") : row.sub);
    } else if (version === 0) this.conn(conn).version = 2;
  }

  duration(n) {
    const row = this.rows[n];
    if (!row || row.pair === NONE) return undefined;
    const other = this.rows[row.pair];
    const [req, ans] = row.kind === K.request ? [row, other] : [other, row];
    const d = ans.t - req.t;
    return Number.isFinite(d) ? d : undefined;
  }

  laneOrder() {
    const rank = (name) => {
      if (name === CLIENT) return [0, 0];
      if (name === AGENT) return [3, 0];
      const m = /^proxy:([0-9]+)$/.exec(name);
      return m ? [1, Number(m[1])] : [2, 0];
    };
    return this.lanes
      .map((_, i) => i)
      .sort((a, b) => {
        const [x, y] = [rank(this.lanes[a]), rank(this.lanes[b])];
        return x[0] - y[0] || x[1] - y[1] || a - b;
      });
  }

  // ---- what the viewer asks (query.rs, server.rs) ------------------------------------------

  status() {
    return {
      file: this.file,
      size: this.fed(),
      fed: this.fed(),
      readTo: this.readTo,
      lines: this.lines,
      rows: this.rows.length,
      turns: this.turns.length,
      malformed: this.malformed,
      firstMalformed: this.firstMalformed,
      incomplete: this.tail.length > 0 ? { offset: this.readTo, bytes: utf8Length(this.tail) } : null,
      capped: this.capped ? { ...this.capped, maxRows: this.maxRows } : null,
      generation: this.generation,
      restarted: this.restarted,
      problem: null,
      lanes: this.laneOrder().map((l) => this.lanes[l]),
      methods: this.methods.all().slice(0, MAX_LISTED),
      sessions: this.sessions.all().slice(0, MAX_LISTED),
    };
  }

  /** The turns of `session` (query.rs `turns`). */
  turnsOf(session, max = MAX_TURNS) {
    const id = this.sessions.find(session);
    if (id === undefined) return { turns: [] };
    const list = [];
    this.turns.forEach((t, k) => {
      if (t.session !== id || list.length >= max) return;
      const d = t.end === NONE ? NaN : this.rows[t.end].t - this.rows[t.start].t;
      list.push({
        turn: k,
        n: t.n,
        stop: this.subs.get(t.stop),
        line: this.rows[t.start].line,
        endLine: t.end === NONE ? null : this.rows[t.end].line,
        ms: Number.isFinite(d) ? d : null,
      });
    });
    return { turns: list };
  }

  /** @param {Filter} f */
  select(f) {
    let method;
    if (f.method) {
      method = this.methods.find(f.method);
      if (method === undefined) return [];
    }
    let session;
    if (f.session) {
      session = this.sessions.find(f.session);
      if (session === undefined) return [];
    }
    const q = f.q ? asciiLower(f.q) : undefined;
    const items = [];
    let last;
    const found = new Map();
    for (let n = 0; n < this.rows.length; n++) {
      const row = this.rows[n];
      if (method !== undefined && row.method !== method) continue;
      if (session !== undefined && row.session !== session) continue;
      if (f.turn !== undefined && f.turn !== null && row.turn !== f.turn) continue;
      if (f.errors && !(row.flags & ERROR)) continue;
      if (q !== undefined) {
        let hit = found.get(row.text);
        if (hit === undefined) {
          hit = asciiLower(this.text[row.text]).includes(q);
          found.set(row.text, hit);
        }
        if (!hit) continue;
      }
      if (f.minMs !== undefined && f.minMs !== null) {
        const d = this.duration(n);
        if (!(d !== undefined && d >= f.minMs)) continue;
      }
      if (f.group && row.kind === K.notification && last && items.length > 0) {
        if (
          last.kind === K.notification &&
          last.from === row.from &&
          last.to === row.to &&
          last.method === row.method &&
          last.sub === row.sub &&
          last.session === row.session &&
          last.turn === row.turn
        ) {
          items[items.length - 1][1]++;
          last = row;
          continue;
        }
      }
      items.push([n, 1]);
      last = row;
    }
    return items;
  }

  rowJson(n, count, preview) {
    const row = this.rows[n];
    const turn = row.turn !== NONE ? this.turns[row.turn] : undefined;
    const d = this.duration(n);
    return {
      n,
      line: row.line,
      entry: row.entry === 0 ? null : row.entry,
      t: Number.isFinite(row.t) ? row.t : null,
      from: this.laneName(row.from),
      to: this.laneName(row.to),
      kind: KINDS[row.kind],
      method: this.methods.get(row.method),
      sub: this.subs.get(row.sub),
      session: this.sessions.get(row.session),
      turn: turn ? row.turn : null,
      turnN: turn ? turn.n : null,
      error: (row.flags & ERROR) !== 0,
      cancel: (row.flags & CANCEL) !== 0,
      cut: (row.flags & CUT) !== 0,
      pair: row.pair === NONE ? null : row.pair,
      pairLine: row.pair === NONE ? null : this.rows[row.pair].line,
      ms: d === undefined ? null : d,
      count,
      preview,
    };
  }

  laneName(l) {
    return l === NONE ? null : this.lanes[l];
  }

  /** @param {Filter} f */
  page(f, from, count) {
    const items = this.select(f);
    const page = items.slice(from, from + Math.min(count, 500));
    return {
      total: items.length,
      from,
      items: page.map(([n, c]) => {
        const row = this.rows[n];
        const p = row.flags & CUT ? null : linePreview(this.text[row.text], row.entry);
        return this.rowJson(n, c, p);
      }),
      generation: this.generation,
    };
  }

  /** @param {Filter} f */
  locate(f, n) {
    const items = this.select(f);
    let lo = 0;
    let hi = items.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (items[mid][0] <= n) lo = mid + 1;
      else hi = mid;
    }
    const i = lo - 1;
    if (i < 0) return { index: null };
    const [row, count] = items[i];
    return { index: row === n || count > 1 ? i : null };
  }

  message(n) {
    const row = this.rows[n];
    if (!row) throw new Error(`no row ${n}`);
    const line = this.text[row.text];
    let json = false;
    let text = line;
    let truncated = true;
    if (!(row.flags & CUT)) {
      const m = messageOf(line, row.entry);
      json = m.json;
      text = m.text;
      truncated = false;
    }
    if (utf8Length(text) > MAX_DETAIL) {
      text = utf8Prefix(text, MAX_DETAIL);
      json = false;
      truncated = true;
    }
    return {
      row: this.rowJson(n, 1, null),
      pair: row.pair === NONE ? null : this.rowJson(row.pair, 1, null),
      json,
      text,
      truncated,
      lineBytes: row.len,
    };
  }

  summary() {
    const kinds = {};
    let first = NaN;
    let last = NaN;
    const requests = new Map();
    const notifications = new Map();
    const perSession = new Map();
    const slowest = [];
    let unanswered = 0;
    let errors = 0;
    this.rows.forEach((row, n) => {
      const kn = KINDS[row.kind];
      kinds[kn] = (kinds[kn] ?? 0) + 1;
      if (Number.isFinite(row.t)) {
        if (Number.isNaN(first)) first = row.t;
        last = row.t;
      }
      if (row.session !== 0) perSession.set(row.session, (perSession.get(row.session) ?? 0) + 1);
      if (row.flags & ERROR && row.kind !== K.request) errors++;
      if (row.kind === K.request) {
        let m = requests.get(row.method);
        if (!m) requests.set(row.method, (m = { count: 0, answered: 0, errors: 0, cancelled: 0, ms: [] }));
        m.count++;
        if (row.pair === NONE) unanswered++;
        else {
          m.answered++;
          if (row.flags & ERROR) m.errors++;
          if (row.flags & CANCEL) m.cancelled++;
          const d = this.duration(n);
          if (d !== undefined) {
            m.ms.push(d);
            slowest.push([d, n]);
          }
        }
      } else if (row.kind === K.notification) notifications.set(row.method, (notifications.get(row.method) ?? 0) + 1);
    });
    const name = (id) => this.methods.get(id) ?? "";
    const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
    const reqs = [...requests.entries()];
    for (const [, m] of reqs) m.ms.sort((a, b) => a - b);
    reqs.sort((a, b) => b[1].count - a[1].count || cmp(name(a[0]), name(b[0])));
    const notes = [...notifications.entries()].sort((a, b) => b[1] - a[1] || cmp(name(a[0]), name(b[0])));
    slowest.sort((a, b) => b[0] - a[0] || a[1] - b[1]);
    const stops = {};
    let open = 0;
    const turnsPer = new Map();
    for (const t of this.turns) {
      turnsPer.set(t.session, (turnsPer.get(t.session) ?? 0) + 1);
      if (t.end === NONE) open++;
      else {
        const s = this.subs.get(t.stop) ?? "(none)";
        stops[s] = (stops[s] ?? 0) + 1;
      }
    }
    const order = this.laneOrder();
    const pos = (l) => order.indexOf(l);
    const bytes = [...this.bytes.values()].sort((a, b) => pos(a[0]) - pos(b[0]) || pos(a[1]) - pos(b[1]));
    const quantile = (s, q) => s[Math.min(Math.max(Math.ceil(q * s.length), 1), s.length) - 1];
    return {
      messages: this.rows.length,
      kinds,
      span: Number.isFinite(first) ? { first, last } : null,
      turns: { count: this.turns.length, open, stops },
      sessions: this.sessions.all().map((s, i) => ({ id: s, turns: turnsPer.get(i + 1) ?? 0, messages: perSession.get(i + 1) ?? 0 })),
      requests: reqs.map(([id, m]) => ({
        method: this.methods.get(id),
        count: m.count,
        answered: m.answered,
        errors: m.errors,
        cancelled: m.cancelled,
        p50: m.ms.length ? quantile(m.ms, 0.5) : null,
        p99: m.ms.length ? quantile(m.ms, 0.99) : null,
        max: m.ms.length ? m.ms[m.ms.length - 1] : null,
      })),
      notifications: notes.map(([id, c]) => ({ method: this.methods.get(id), count: c })),
      bytes: bytes.map(([f, t, b, c]) => ({ from: this.laneName(f), to: this.laneName(t), bytes: b, messages: c })),
      slowest: slowest.slice(0, 10).map(([ms, n]) => {
        const row = this.rows[n];
        return { n, line: row.line, method: this.methods.get(row.method), ms, from: this.laneName(row.from), to: this.laneName(row.to) };
      }),
      problems: {
        errors,
        invalid: kinds.invalid ?? 0,
        oversize: kinds.oversize ?? 0,
        malformed: this.malformed,
        unanswered,
      },
    };
  }
}

/** `s` with A–Z lowered (the search ignores ASCII case only, as the server's). */
export function asciiLower(s) {
  return s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
}

/** The viewer's source over a model: the same answers as the server's API, as promises. */
export function modelSource(model) {
  return {
    status: async () => model.status(),
    summary: async () => model.summary(),
    rows: async (f, from, count) => model.page(f, from, count),
    locate: async (f, n) => model.locate(f, n),
    turns: async (session) => model.turnsOf(session),
    message: async (n) => model.message(n),
  };
}
