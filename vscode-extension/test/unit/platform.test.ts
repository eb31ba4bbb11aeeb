// The browser's Platform parts that run anywhere: POSIX paths (checked against Node's
// path.posix), the token as a WebSocket subprotocol, the browser's refusals of local agents
// and caFiles, the saved conversations in a Memento, and the UTF-8 length the store counts.

import { test } from "node:test";
import assert from "node:assert/strict";
import * as path from "node:path";
import type * as vscode from "vscode";
import { posixPaths } from "../../src/platform/posixPaths";
import { tokenSubprotocol } from "../../src/protocol/remoteBrowser";
import { RemoteError, type TransportEvents } from "../../src/protocol/transport";
import { browserTransports, LOCAL_AGENTS_UNAVAILABLE } from "../../src/platform/browserTransports";
import { TransportRefused } from "../../src/platform/platform";
import { browserStoreFiles } from "../../src/platform/browserStoreFiles";
import { SessionStore } from "../../src/sessions/store";
import { utf8Length } from "../../../trace-viewer/model.js";
import { makeNonce } from "../../src/webview/html";
import type { EngineModule } from "../../src/protocol/engine";

const P = path.posix;

test("posixPaths: the same answers as Node's path.posix (resolve from /)", () => {
  const pieces = [
    "/",
    "/a/b",
    "/a/b/",
    "a/b",
    "./a",
    "../a",
    "/a/../../b",
    "/a/./b/../c",
    "a//b",
    "",
    ".",
    "..",
    "/x/y.txt",
    "y.txt",
    "/a/b/..",
  ];
  for (const a of pieces) {
    assert.equal(posixPaths.normalize(a), P.normalize(a), `normalize(${JSON.stringify(a)})`);
    assert.equal(posixPaths.dirname(a), P.dirname(a), `dirname(${JSON.stringify(a)})`);
    assert.equal(posixPaths.basename(a), P.basename(a), `basename(${JSON.stringify(a)})`);
    assert.equal(posixPaths.isAbsolute(a), P.isAbsolute(a), `isAbsolute(${JSON.stringify(a)})`);
    assert.equal(posixPaths.resolve("/", a), P.resolve("/", a), `resolve("/", ${JSON.stringify(a)})`);
    for (const b of pieces) {
      assert.equal(posixPaths.join(a, b), P.join(a, b), `join(${JSON.stringify(a)}, ${JSON.stringify(b)})`);
      assert.equal(posixPaths.resolve("/", a, b), P.resolve("/", a, b), `resolve("/", ${JSON.stringify(a)}, ${JSON.stringify(b)})`);
      if (P.isAbsolute(a) && P.isAbsolute(b))
        assert.equal(posixPaths.relative(a, b), P.relative(a, b), `relative(${JSON.stringify(a)}, ${JSON.stringify(b)})`);
    }
  }
  assert.equal(posixPaths.basename("/x/y.txt", ".txt"), "y");
  assert.equal(posixPaths.sep, "/");
  assert.equal(posixPaths.delimiter, ":");
});

test("browser: the token is the subprotocol acp.token.TOKEN; a token a subprotocol cannot carry is refused", () => {
  assert.equal(tokenSubprotocol("e2e-remote-token-0123456789abcdef"), "acp.token.e2e-remote-token-0123456789abcdef");
  for (const bad of ["with space", "comma,list", "ünïcode", ""]) {
    const r = tokenSubprotocol(bad);
    assert.ok(r instanceof RemoteError, bad);
    assert.match(r.message, /cannot carry/);
  }
});

test("browser: a local agent and a caFile are refused with what to do instead", () => {
  const events: TransportEvents = { onStdout() {}, onStdoutEnd() {}, onStderr() {}, onExit() {} };
  const o = { engine: {} as EngineModule };
  assert.equal(browserTransports.localAgentsUnavailable, LOCAL_AGENTS_UNAVAILABLE);
  assert.throws(
    () => browserTransports.open({ name: "local", command: "acp", args: ["demo-agent"] }, o, events),
    (e: Error) =>
      e instanceof TransportRefused && /local agents cannot run in VS Code for the Web/.test(e.message) && /"url"/.test(e.message),
  );
  assert.throws(
    () => browserTransports.open({ name: "tls", command: "", args: [], url: "wss://h/acp", caFile: "/ca.pem" }, o, events),
    (e: Error) => e instanceof TransportRefused && /caFile is not supported in VS Code for the Web/.test(e.message),
  );
});

/** A Memento as VS Code keeps one (get, update), in memory. */
function memento(): vscode.Memento & { data: Map<string, unknown> } {
  const data = new Map<string, unknown>();
  return {
    data,
    keys: () => [...data.keys()],
    get: <T>(k: string, d?: T) => (data.has(k) ? (data.get(k) as T) : d),
    update: (k: string, v: unknown) => {
      if (v === undefined) data.delete(k);
      else data.set(k, v);
      return Promise.resolve();
    },
  } as vscode.Memento & { data: Map<string, unknown> };
}

test("browser: the saved conversations live in the workspace's Memento; a missing thread is a problem, not a throw", () => {
  const state = memento();
  const errors: unknown[] = [];
  const store = new SessionStore(
    browserStoreFiles(state, (e) => errors.push(e)),
    () => 1000,
  );
  store.save({ sessionId: "s/1", agent: "remote", agentTitle: "demo", title: "hello" }, '{"format":1}');
  assert.deepEqual([...state.data.keys()].sort(), ["acp.sessions.index", "acp.sessions.thread.s/1"]);
  const again = new SessionStore(browserStoreFiles(state, (e) => errors.push(e)));
  assert.equal(again.list()[0]!.title, "hello");
  assert.equal(again.thread("s/1"), '{"format":1}');
  assert.equal(again.thread("gone"), undefined);
  assert.match(again.problems[0]!, /saved conversation gone: not saved in this workspace's state/);
  again.remove("s/1");
  assert.deepEqual([...state.data.keys()], ["acp.sessions.index"]);
  assert.deepEqual(errors, []);
});

test("store: utf8Length is the encoded length, surrogate pairs and lone surrogates included", () => {
  for (const s of ["", "ascii", "é", "€uro", "😀", "a😀b", "\ud800", "\udc00x", "\ud800\ud800", "x".repeat(1000) + "ß"]) {
    assert.equal(utf8Length(s), new TextEncoder().encode(s).length, JSON.stringify(s));
  }
});

test("webview nonce: 24 characters of [A-Za-z0-9] from Web Crypto, different each time", () => {
  const seen = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const n = makeNonce();
    assert.match(n, /^[A-Za-z0-9]{24}$/);
    seen.add(n);
  }
  assert.equal(seen.size, 200);
});
