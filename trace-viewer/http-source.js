// The viewer's source in the browser: `acp trace`'s API (acp-cli/src/cli/trace/server.rs),
// with the token as `Authorization: Bearer` on every request.

/** The query parameters of a filter. */
export function filterParams(f) {
  const p = {};
  if (f.method) p.method = f.method;
  if (f.session) p.session = f.session;
  if (f.turn !== undefined && f.turn !== null) p.turn = String(f.turn);
  if (f.errors) p.errors = "1";
  if (f.minMs !== undefined && f.minMs !== null) p.minMs = String(f.minMs);
  if (f.q) p.q = f.q;
  if (f.group) p.group = "1";
  return p;
}

export class HttpSource {
  constructor(token, base = "") {
    this.token = token;
    this.base = base;
  }

  async get(path, params = {}) {
    const url = `${this.base}${path}?${new URLSearchParams(params)}`;
    const res = await fetch(url, { headers: { Authorization: `Bearer ${this.token}` }, cache: "no-store", credentials: "omit" });
    if (res.status === 409) {
      const e = new Error("a newer search replaced this one");
      e.superseded = true;
      throw e;
    }
    if (!res.ok) {
      let why = `HTTP ${res.status}`;
      try {
        why = (await res.json()).error ?? why;
      } catch {
        // not JSON: the status says it
      }
      throw new Error(why);
    }
    return res.json();
  }

  status() {
    return this.get("/api/status");
  }

  summary() {
    return this.get("/api/summary");
  }

  rows(filter, from, count) {
    return this.get("/api/rows", { ...filterParams(filter), from: String(from), count: String(count) });
  }

  locate(filter, n) {
    return this.get("/api/locate", { ...filterParams(filter), n: String(n) });
  }

  turns(session) {
    return this.get("/api/turns", { session });
  }

  message(n) {
    return this.get("/api/message", { n: String(n) });
  }
}
