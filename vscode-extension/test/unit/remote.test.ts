// Remote agents over WebSocket (src/protocol/remote.ts): AgentConnection over a RemoteAgent
// against a real `acp serve --http -- acp demo-agent` (initialize, a session opened by the
// session engine, a turn whose updates are folded inside wasm and whose permission question
// and file write are served here), and each failure in words: a wrong token (401), a wrong
// path (404), nothing listening, an untrusted certificate, a dropped connection. The frame <->
// line bridge itself against an in-process `ws` server.
//
// The `acp` binary: $ACP_BIN (scripts/test-vscode.sh sets it; then it must exist), else the
// repository's target/release/acp or target/debug/acp; without one these tests are skipped.
import { NodeHttpClient } from "../../src/protocol/httpNode";
import { FetchHttpClient } from "../../src/protocol/httpFetch";
import { nodeTransports } from "../../src/platform/nodeTransports";
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { WebSocketServer, type WebSocket } from "ws";
import { FsBridge, type DocumentHost } from "../../src/bridges/fs";
import { nodeBridgeFiles } from "../../src/platform/nodeBridgeFiles";
import { PermissionBridge } from "../../src/bridges/permission";
import { Conversation } from "../../src/bridges/conversation";
import { ClientRouter } from "../../src/bridges/router";
import { AgentConnection, AgentStartError } from "../../src/protocol/agent";
import type { EngineModule } from "../../src/protocol/engine";
import { nullLogger, nullTrace } from "../../src/protocol/log";
import { checkRemoteUrl, RemoteAgent, tokenKey } from "../../src/protocol/remote";
import { RemoteError, type ExitInfo } from "../../src/protocol/transport";
import { answer, outgoing, SseDecoder, SseRemoteAgent } from "../../src/protocol/remoteSse";
import { parseAgentSettings } from "../../src/agents";
import { messageSource } from "../../src/webview/threadModel";
import { SessionDecisions } from "../../src/sessions/decisions";
import { openSession } from "../../src/sessions/opener";
import { extensionRoot, testPolicy, tryEngine } from "./engine-helpers";

const { engine, skip: skipEngine } = tryEngine();
const E = engine as EngineModule;

function acpBinary(): string | undefined {
  if (process.env.ACP_BIN) {
    if (!fs.existsSync(process.env.ACP_BIN)) throw new Error(`ACP_BIN=${process.env.ACP_BIN} does not exist`);
    return process.env.ACP_BIN;
  }
  const candidates = ["release", "debug"].map((p) => path.resolve(extensionRoot, "..", "target", p, "acp")).filter((p) => fs.existsSync(p));
  // The newest build (the other may be stale).
  return candidates.sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0];
}
const ACP = acpBinary();
const skip = skipEngine || (ACP ? false : "no acp binary (cargo build -p acp-cli, or set ACP_BIN)");

const TOKEN = "remote-test-token-0123456789abcdef";
const TLS = path.join(extensionRoot, "test", "fixtures", "tls"); // a self-signed localhost certificate, for tests only

interface Server {
  /** host:port */
  addr: string;
  child: ChildProcess;
  stop(): void;
}

const servers: Server[] = [];
process.on("exit", () => servers.forEach((s) => s.stop()));

/** `acp serve --http 127.0.0.1:0 --token-file F [extra] -- acp demo-agent`, once it listens. */
function serve(extra: string[] = []): Promise<Server> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "acp-remote-"));
  const tokenFile = path.join(dir, "token");
  fs.writeFileSync(tokenFile, TOKEN);
  const child = spawn(ACP!, ["serve", "--http", "127.0.0.1:0", "--token-file", tokenFile, ...extra, "--", ACP!, "demo-agent"], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  return new Promise((resolve, reject) => {
    let err = "";
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (s: string) => {
      err += s;
      const m = /listening on https?:\/\/(\S+)\/acp/.exec(err);
      if (m) {
        const server = { addr: m[1]!, child, stop: () => child.exitCode === null && child.kill("SIGTERM") };
        servers.push(server);
        resolve(server);
      }
    });
    child.on("exit", (code) => reject(new Error(`acp serve exited (${code}) before listening: ${err}`)));
  });
}

/** The fixture's private key, copied readable by us only (`acp serve` refuses a key file others can read). */
function privateKey(): string {
  const key = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "acp-remote-key-")), "key.pem");
  fs.copyFileSync(path.join(TLS, "key.pem"), key);
  fs.chmodSync(key, 0o600);
  return key;
}

/** A port nothing listens on (bound, then closed). */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

function setup() {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "acp-remote-ws-")));
  // The chat's conversation: a session engine's, the agent's updates folded into it inside wasm.
  const session = new E.Session('{"open":"new"}', ws);
  const conv = new Conversation(
    session.thread(),
    () => {},
    undefined,
    undefined,
    undefined,
    (json) => session.update(json),
  );
  /** session/updates that reached JavaScript (the router): none once the session is open. */
  let handled = 0;
  const writes: string[] = [];
  const questions: string[] = [];
  const host: DocumentHost = {
    openDocumentText: () => undefined,
    applyWrite: async (p, c) => {
      writes.push(p);
      fs.writeFileSync(p, c);
    },
    workspaceFolders: () => [ws],
  };
  const handler = new ClientRouter({
    permission: new PermissionBridge(
      {
        prompt: (m) => {
          questions.push(m.message);
          return Promise.resolve("allow");
        },
      },
      () => ({ autoApprove: false }),
      nullLogger,
      testPolicy(),
      () => {},
    ),
    fs: new FsBridge(nodeBridgeFiles, host, () => ({ allowWritesOutsideWorkspace: false }), testPolicy(), undefined, nullLogger),
    onSessionUpdate: (_sessionId, params) => {
      handled++;
      conv.applyUpdate(params);
    },
    log: nullLogger,
  });
  const open = (conn: AgentConnection) =>
    openSession(conn, session, {
      cwd: ws,
      mcpSetting: {},
      decisions: new SessionDecisions(() => E),
      onFolded: () => conv.changed(),
      notice: (level, text) => conv.notice(level, text),
    });
  const start = (url: string, token: string | undefined, caFile?: string, allowInsecure?: boolean) =>
    AgentConnection.start(
      { name: "remote", command: "", args: [], url, caFile },
      {
        engine: E,
        transports: nodeTransports,
        engineOptions: {},
        capabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false },
        clientInfo: { name: "test", version: "0" },
        handler,
        log: nullLogger,
        trace: nullTrace,
        onStderr: () => {},
        token,
        allowInsecure,
      },
    );
  const text = () =>
    conv
      .saved()
      .entries.map((e) => (e.type === "agent" ? messageSource(e.content) : ""))
      .join("");
  return { ws, start, open, text, writes, questions, handled: () => handled };
}

/** The RemoteError an AgentConnection.start failed with. */
async function startFailure(p: Promise<AgentConnection>): Promise<RemoteError> {
  try {
    const conn = await p;
    await conn.stop(100);
  } catch (e) {
    assert.ok(e instanceof AgentStartError, `not an AgentStartError: ${String(e)}`);
    const remote = AgentConnection.remoteFailure(e);
    assert.ok(remote, `no remote failure in: ${e.message}`);
    return remote;
  }
  assert.fail("the connection was made");
}

for (const scheme of ["ws", "http"] as const) {
  test(
    `remote (${scheme}): initialize, a session the engine opens and a turn; the agent's write is asked and served here`,
    { skip },
    async () => {
      const server = await serve();
      const s = setup();
      const conn = await s.start(`${scheme}://${server.addr}/acp`, TOKEN);
      try {
        assert.match(conn.agentTitle, /demo/i);
        const sess = await s.open(conn);
        const res = await conn.prompt(sess.sessionId, [{ type: "text", text: "hello over the network" }]);
        assert.equal(res.stopReason, "end_turn");
        assert.equal(s.handled(), 0, "no session/update crossed into JavaScript");
        assert.match(s.text(), /hello over the network/);
        // The remote agent's fs/write_text_file came here: asked, then written in our workspace.
        assert.equal(s.questions.length, 1);
        assert.deepEqual(s.writes, [path.join(s.ws, "acp-demo.txt")]);
        assert.match(s.text(), /I wrote acp-demo\.txt/);
      } finally {
        await conn.stop(1000);
        server.stop();
      }
    },
  );

  test(`remote (${scheme}): a wrong token is a clear 401 and no connection`, { skip }, async () => {
    const server = await serve();
    const s = setup();
    const url = `${scheme}://${server.addr}/acp`;
    const wrong = await startFailure(s.start(url, "not-the-token-0123456789"));
    assert.equal(wrong.kind, "unauthorized");
    assert.equal(wrong.status, 401);
    assert.match(wrong.message, /refused the token \(HTTP 401/);
    const none = await startFailure(s.start(url, undefined));
    assert.equal(none.kind, "unauthorized");
    server.stop();
  });

  test(`remote (${scheme}): a wrong path is 404, a closed port is refused, each said so`, { skip }, async () => {
    const server = await serve();
    const s = setup();
    const notFound = await startFailure(s.start(`${scheme}://${server.addr}/nope`, TOKEN));
    assert.equal(notFound.kind, "not_found");
    assert.match(notFound.message, /HTTP 404.*\/acp/);
    server.stop();
    const port = await freePort();
    const refused = await startFailure(s.start(`${scheme}://127.0.0.1:${port}/acp`, TOKEN));
    assert.equal(refused.kind, "refused");
    assert.match(refused.message, /connection refused/);
  });

  test(`remote (${scheme}s): an untrusted certificate is a TLS failure; trusted through caFile it works`, { skip }, async () => {
    const server = await serve(["--tls-cert", path.join(TLS, "cert.pem"), "--tls-key", privateKey()]);
    const s = setup();
    const url = `${scheme}s://localhost:${server.addr.split(":").pop()}/acp`;
    const tls = await startFailure(s.start(url, TOKEN));
    assert.equal(tls.kind, "tls");
    assert.match(tls.message, /TLS handshake with localhost:\d+ failed: .*self.signed/i);
    const conn = await s.start(url, TOKEN, path.join(TLS, "cert.pem"));
    const sess = await conn.newSession(s.ws);
    assert.ok(sess.sessionId);
    await conn.stop(1000);
    server.stop();
  });

  test(`remote (${scheme}s): a missing caFile is a start error, before connecting`, { skip }, async () => {
    const s = setup();
    await assert.rejects(
      s.start(`${scheme}s://localhost:1/acp`, TOKEN, "/nonexistent/ca.pem"),
      /cannot read its caFile "\/nonexistent\/ca\.pem"/,
    );
  });

  test(`remote (${scheme}): the server going away ends the connection like a crash, and pending calls fail`, { skip }, async () => {
    const server = await serve();
    const s = setup();
    const conn = await s.start(`${scheme}://${server.addr}/acp`, TOKEN);
    const sess = await conn.newSession(s.ws);
    assert.ok(sess.sessionId);
    server.child.kill("SIGKILL");
    const exit: ExitInfo = await conn.exited;
    assert.equal(exit.remote?.kind, "closed", exit.remote?.message);
    assert.match(exit.remote!.message, /closed the connection|failed|ended|was lost/);
    assert.equal(conn.isStopping, false); // not asked for: the extension restarts it
    await assert.rejects(conn.newSession(s.ws));
  });
}

// ---- the frame <-> line bridge, against an in-process server -------------------------------

function wsServer(): Promise<{ url: string; sockets: Promise<WebSocket>; headers: Promise<Record<string, unknown>>; close(): void }> {
  return new Promise((resolve) => {
    const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    let gotSocket!: (w: WebSocket) => void;
    let gotHeaders!: (h: Record<string, unknown>) => void;
    const sockets = new Promise<WebSocket>((r) => (gotSocket = r));
    const headers = new Promise<Record<string, unknown>>((r) => (gotHeaders = r));
    wss.on("connection", (w, req) => {
      gotHeaders(req.headers);
      gotSocket(w);
    });
    wss.on("listening", () =>
      resolve({
        url: `ws://127.0.0.1:${(wss.address() as net.AddressInfo).port}/acp`,
        sockets,
        headers,
        close: () => {
          for (const c of wss.clients) c.terminate();
          wss.close();
        },
      }),
    );
  });
}

/** The HTTP + SSE transport runs on the host's HTTP client: Node's (the desktop extension host)
 *  and `fetch` (the browser's; Node has the same API), each through the same wire tests. */
const HTTP_CLIENTS = [
  ["node:http", (u: URL) => new NodeHttpClient(u)],
  ["fetch", (u: URL) => new FetchHttpClient(u)],
] as const;

test("remote bridge: lines split anywhere become whole frames; a frame becomes one line; the token is a Bearer header", async () => {
  const srv = await wsServer();
  const got: string[] = [];
  const lines: string[] = [];
  const decoder = new TextDecoder();
  let gotLine!: () => void;
  const one = new Promise<void>((r) => (gotLine = r));
  const agent = new RemoteAgent(
    srv.url,
    { token: "tok-123", keepaliveMs: 0 },
    {
      onStdout: (b) => {
        lines.push(decoder.decode(b));
        gotLine();
      },
      onStdoutEnd() {},
      onStderr() {},
      onExit() {},
    },
  );
  const enc = new TextEncoder();
  // Written before the socket opened (queued), split inside a line and inside a UTF-8 character.
  const bytes = enc.encode('{"a":"é"}\n{"b":2}\n\n{"c":3}\n');
  agent.write(bytes.subarray(0, 7));
  agent.write(bytes.subarray(7, 13));
  await agent.started;
  const sock = await srv.sockets;
  assert.equal((await srv.headers).authorization, "Bearer tok-123");
  const three = new Promise<void>((r) =>
    sock.on("message", (d) => {
      got.push(String(d));
      if (got.length === 3) r();
    }),
  );
  agent.write(bytes.subarray(13));
  await three;
  assert.deepEqual(got, ['{"a":"é"}', '{"b":2}', '{"c":3}']);
  // A pretty-printed message is still one line for the engine.
  sock.send('{\n  "jsonrpc": "2.0",\r\n  "method": "x"\n}');
  await one;
  assert.deepEqual(lines, ['{   "jsonrpc": "2.0",    "method": "x" }\n']);
  const exit = await agent.stop(500);
  assert.equal(exit.remote, undefined); // a stop asked for is no failure
  srv.close();
});

test("remote: URLs and settings", () => {
  assert.ok(checkRemoteUrl("ws://127.0.0.1:8765/acp") instanceof URL);
  assert.ok(checkRemoteUrl("wss://devbox.example/acp") instanceof URL);
  assert.ok(checkRemoteUrl("http://devbox:8765/acp") instanceof URL);
  assert.ok(checkRemoteUrl("https://devbox/acp") instanceof URL);
  assert.ok(checkRemoteUrl("ftp://x/acp") instanceof RemoteError);
  assert.ok(checkRemoteUrl("not a url") instanceof RemoteError);
  assert.ok(checkRemoteUrl("ws://user:pw@host/acp") instanceof RemoteError);
  assert.equal(tokenKey("wss://devbox.example/acp?x=1"), "wss://devbox.example");
  assert.equal(tokenKey("ws://127.0.0.1:8765/acp"), "ws://127.0.0.1:8765");
  const { agents, errors } = parseAgentSettings([
    { name: "devbox", url: "ws://devbox:8765/acp" },
    { url: "wss://h/acp", caFile: "/ca.pem" },
    { name: "both", url: "ws://h/acp", command: "x" },
    { name: "sse", url: "https://h/acp" },
    { name: "ftp", url: "ftp://h/acp" },
    { name: "bad-ca", url: "wss://h/acp", caFile: 3 },
    { name: "neither" },
  ]);
  assert.deepEqual(agents, [
    { name: "devbox", command: "", args: [], url: "ws://devbox:8765/acp", caFile: undefined },
    { name: "wss://h/acp", command: "", args: [], url: "wss://h/acp", caFile: "/ca.pem" },
    { name: "sse", command: "", args: [], url: "https://h/acp", caFile: undefined },
  ]);
  assert.equal(errors.length, 4);
  assert.match(errors[0]!, /acp.agents\[2\]: give either "command".*or "url"/);
  assert.match(errors[1]!, /acp.agents\[4\]: ftp:\/\/h\/acp: the scheme must be ws:\/\/ or wss:\/\/ \(WebSocket\), or http:\/\//);
  assert.match(errors[2]!, /acp.agents\[5\]: "caFile" must be/);
  assert.match(errors[3]!, /acp.agents\[6\]: "command" \(or "url"/);
});

test("SSE decoding: events split at every offset, CRLF and CR line ends, comments, multi-line data, the size limit", (t) => {
  if (skipEngine) return t.skip(skipEngine); // acp-core's SseDecoder, through the engine
  const stream =
    ':keepalive\r\n\r\ndata: {"a":1}\n\nevent: message\rdata:{"b":\rdata: 2}\r\rdata: ' + "x".repeat(50) + "\n\ndata: last\n\n";
  for (let cut = 0; cut <= stream.length; cut++) {
    const d = new SseDecoder(40);
    const got = [...d.feed(stream.slice(0, cut)), ...d.feed(stream.slice(cut))];
    // The event over the limit is reported by the size of its data in bytes (acp-core's
    // SseDecoder; the TypeScript decoder it replaced counted the characters of its lines, 56).
    assert.deepEqual(got, ['{"a":1}', '{"b":\n2}', { size: 50 }, "last"], `cut at ${cut}`);
    d.free();
  }
});

test("SSE posting: each message's envelope (method, id, the session it names)", { skip: skipEngine }, () => {
  assert.deepEqual(outgoing('{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}'), {
    line: '{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}',
    method: "session/prompt",
    id: "3",
    session: "s1",
  });
  const answer = outgoing('{"jsonrpc":"2.0","id":"a-1","result":{}}');
  assert.equal(answer.method, undefined);
  assert.equal(answer.id, '"a-1"');
  assert.equal(outgoing('{"jsonrpc":"2.0","method":"$/cancel_request","params":{"sessionId":"s1","requestId":3}}').session, undefined);
  assert.equal(outgoing('{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/"}}').session, undefined);
  assert.deepEqual(outgoing("not json"), { line: "not json" });
});

test("SSE posting: $/cancel_request inside proxy/successor goes with the connection; anything else it wraps, with its session", (t) => {
  if (skipEngine) return t.skip(skipEngine);
  const proxied = (inner: object, sessionId = "s1") =>
    JSON.stringify({ jsonrpc: "2.0", method: "proxy/successor", params: { ...inner, sessionId } });
  const cancel = { method: "$/cancel_request", params: { requestId: 3 } };
  assert.equal(outgoing(proxied(cancel)).session, undefined);
  // Nested envelopes are unwrapped to the message inside.
  assert.equal(outgoing(proxied({ method: "proxy/successor", params: cancel })).session, undefined);
  assert.equal(outgoing(proxied({ method: "session/update", params: { sessionId: "inner" } })).session, "s1");
  // Inside an envelope only $/cancel_request is the connection's.
  assert.equal(outgoing(proxied({ method: "$/progress", params: {} })).session, "s1");
  assert.equal(outgoing(proxied({})).session, "s1");
  // An answer naming a session (session/new's), and what is no answer.
  assert.deepEqual(answer('{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s-new"}}'), { id: "1", session: "s-new" });
  assert.deepEqual(answer('{"jsonrpc":"2.0","id":"x","error":{"code":-32603,"message":"no"}}'), { id: '"x"', session: undefined });
  assert.equal(answer('{"jsonrpc":"2.0","method":"session/update","params":{}}'), undefined);
  assert.equal(answer("not json"), undefined);
});

for (const [client, httpClient] of HTTP_CLIENTS)
  test(`SSE wire (${client}): the token on every request, the connection's stream first, session streams, answers without a session, DELETE on stop`, async (t) => {
    if (skipEngine) return t.skip(skipEngine);
    type Seen = { method: string; auth?: string; conn?: string; session?: string; body: string; accept?: string };
    const seen: Seen[] = [];
    const streams: http.ServerResponse[] = [];
    let onSeen: (() => void) | undefined;
    /** Resolves once `cond` holds for the requests seen (checked on each request: no polling). */
    const seenUntil = (cond: () => boolean) => new Promise<void>((r) => (cond() ? r() : (onSeen = () => cond() && r())));
    let sawSessionStream!: (id: string) => void;
    const sessionStreams: string[] = [];
    const streamOpened = new Promise<void>(
      (r) => (sawSessionStream = (id) => (sessionStreams.push(id), sessionStreams.length === 2 && r())),
    );
    let deleted!: () => void;
    const gotDelete = new Promise<void>((r) => (deleted = r));
    const server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        const h = (n: string) => req.headers[n] as string | undefined;
        seen.push({
          method: req.method!,
          auth: h("authorization"),
          conn: h("acp-connection-id"),
          session: h("acp-session-id"),
          body,
          accept: h("accept"),
        });
        onSeen?.();
        if (req.method === "POST" && body.includes('"initialize"')) {
          res.writeHead(200, { "content-type": "application/json", "acp-connection-id": "c-1" });
          res.end(JSON.stringify({ jsonrpc: "2.0", id: 0, result: { protocolVersion: 1 } }));
        } else if (req.method === "GET") {
          res.writeHead(200, { "content-type": "text/event-stream" });
          res.write(":\n\n");
          streams.push(res);
          if (h("acp-session-id")) sawSessionStream(h("acp-session-id")!);
        } else if (req.method === "DELETE") {
          res.writeHead(200).end();
          deleted();
        } else res.writeHead(202).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/acp`;
    const lines: string[] = [];
    let onLine: (() => void) | undefined;
    const agent = new SseRemoteAgent(
      url,
      { token: "tok-9", http: httpClient },
      {
        onStdout: (b) => (lines.push(new TextDecoder().decode(b)), onLine?.()),
        onStdoutEnd() {},
        onStderr() {},
        onExit() {},
      },
    );
    const nextLine = (n: number) => new Promise<void>((r) => (onLine = () => lines.length >= n && r()));
    await agent.started;
    const enc = (o: object) => new TextEncoder().encode(`${JSON.stringify(o)}\n`);
    let got = nextLine(1);
    agent.write(enc({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: 1 } }));
    await got;
    assert.deepEqual(JSON.parse(lines[0]!), { jsonrpc: "2.0", id: 0, result: { protocolVersion: 1 } });
    // The connection's stream was opened before the answer reached the engine.
    assert.deepEqual(
      seen.map((s) => [s.method, s.conn, s.accept]),
      [
        ["POST", undefined, "application/json"],
        ["GET", "c-1", "text/event-stream"],
      ],
    );
    agent.write(enc({ jsonrpc: "2.0", id: 1, method: "session/new", params: { cwd: "/" } }));
    agent.write(enc({ jsonrpc: "2.0", id: 2, method: "session/prompt", params: { sessionId: "s-old", prompt: [] } }));
    // The session/new answer arrives on the connection's stream: the new session's stream opens at once.
    got = nextLine(2);
    await seenUntil(() => seen.filter((x) => x.method === "POST").length >= 3);
    streams[0]!.write(`data: ${JSON.stringify({ jsonrpc: "2.0", id: 1, result: { sessionId: "s-new" } })}\n\n`);
    await got;
    await streamOpened;
    assert.deepEqual(sessionStreams.sort(), ["s-new", "s-old"]);
    // The prompt's POST named its session, after that session's stream was opened.
    const iPrompt = seen.findIndex((s) => s.body.includes("session/prompt"));
    const iStream = seen.findIndex((s) => s.method === "GET" && s.session === "s-old");
    assert.ok(iStream >= 0 && iStream < iPrompt, "the session's stream first");
    assert.equal(seen[iPrompt]!.session, "s-old");
    // An answer to the agent's request: posted, with no session.
    agent.write(enc({ jsonrpc: "2.0", id: "agent-1", result: { outcome: { outcome: "cancelled" } } }));
    // A cancel wrapped in proxy/successor belongs to the connection, whatever session it names.
    agent.write(
      enc({
        jsonrpc: "2.0",
        method: "proxy/successor",
        params: { method: "$/cancel_request", params: { requestId: 2 }, sessionId: "s-old" },
      }),
    );
    await agent.stop(1000);
    await gotDelete;
    const proxied = seen.find((s) => s.body.includes("proxy/successor"))!;
    assert.equal(proxied.session, undefined);
    assert.equal(proxied.conn, "c-1");
    const answer = seen.find((s) => s.body.includes("agent-1"))!;
    assert.equal(answer.session, undefined);
    assert.equal(answer.conn, "c-1");
    assert.ok(
      seen.every((s) => s.auth === "Bearer tok-9"),
      "the token on every request",
    );
    assert.equal(seen.at(-1)!.method, "DELETE");
    for (const s of streams) s.end();
    server.close();
  });

for (const [client, httpClient] of HTTP_CLIENTS)
  test(`SSE wire (${client}): an event over the limit is skipped as on stdio: a response fails its call, a request is answered, the log says so`, async (t) => {
    if (skipEngine) return t.skip(skipEngine);
    const posts: string[] = [];
    let onPost: (() => void) | undefined;
    let stream: http.ServerResponse | undefined;
    let streamOpen!: () => void;
    const opened = new Promise<void>((r) => (streamOpen = r));
    const server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        if (req.method === "POST" && body.includes('"initialize"')) {
          res.writeHead(200, { "content-type": "application/json", "acp-connection-id": "c-1" });
          res.end(JSON.stringify({ jsonrpc: "2.0", id: 0, result: { protocolVersion: 1 } }));
        } else if (req.method === "GET") {
          res.writeHead(200, { "content-type": "text/event-stream" });
          res.write(":\n\n");
          stream = res;
          streamOpen();
        } else {
          if (req.method === "POST") posts.push(body);
          onPost?.();
          res.writeHead(req.method === "DELETE" ? 200 : 202).end();
        }
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const lines: string[] = [];
    const logged: string[] = [];
    let onLine: (() => void) | undefined;
    const agent = new SseRemoteAgent(
      `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/acp`,
      { maxMessageBytes: 100, http: httpClient },
      {
        onStdout: (b) => (lines.push(new TextDecoder().decode(b)), onLine?.()),
        onStdoutEnd() {},
        onStderr: (text) => logged.push(text),
        onExit() {},
      },
    );
    const untilLines = (n: number) => new Promise<void>((r) => (lines.length >= n ? r() : (onLine = () => lines.length >= n && r())));
    const enc = (o: object) => new TextEncoder().encode(`${JSON.stringify(o)}\n`);
    agent.write(enc({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: 1 } }));
    await untilLines(1);
    await opened;
    const big = "x".repeat(500);
    const answered = new Promise<void>((r) => (onPost = () => posts.some((p) => p.includes("big-1")) && r()));
    stream!.write(`data: ${JSON.stringify({ jsonrpc: "2.0", id: 1, result: { text: big } })}\n\n`);
    stream!.write(`data: ${JSON.stringify({ jsonrpc: "2.0", id: "big-1", method: "fs/write_text_file", params: { content: big } })}\n\n`);
    stream!.write(`data: ${JSON.stringify({ jsonrpc: "2.0", method: "session/update", params: { text: big } })}\n\n`);
    stream!.write(`data: ${JSON.stringify({ jsonrpc: "2.0", method: "after" })}\n\n`);
    await untilLines(3);
    await answered;
    // The response's place is taken by an error for its id (the engine fails that call at once);
    // the notification is dropped; what follows still arrives.
    assert.deepEqual(JSON.parse(lines[1]!), {
      jsonrpc: "2.0",
      id: 1,
      error: { code: -32603, message: "the response was larger than the client's 100-byte limit and was dropped" },
    });
    assert.deepEqual(JSON.parse(lines[2]!), { jsonrpc: "2.0", method: "after" });
    const answer = JSON.parse(posts.find((p) => p.includes("big-1"))!);
    assert.equal(answer.id, "big-1");
    assert.equal(answer.error.code, -32600);
    assert.deepEqual(answer.error.data, { maxMessageBytes: 100 });
    assert.equal(logged.length, 3);
    assert.match(logged[0]!, /a response \(its call fails\) of 545 bytes, over the 100-byte limit, was skipped/);
    assert.match(logged[1]!, /a request \(answered with an error\)/);
    assert.match(logged[2]!, /the connection's stream: a message of \d+ bytes/);
    await agent.stop(1000);
    stream!.end();
    server.close();
  });

for (const [client, httpClient] of HTTP_CLIENTS)
  test(`SSE wire (${client}): the first message must be initialize; an initialize error reaches the engine, then the transport ends`, async (t) => {
    if (skipEngine) return t.skip(skipEngine);
    const lines: string[] = [];
    const first = new SseRemoteAgent(
      "http://127.0.0.1:9/acp",
      { http: httpClient },
      { onStdout() {}, onStdoutEnd() {}, onStderr() {}, onExit() {} },
    );
    first.write(new TextEncoder().encode('{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}\n'));
    assert.match((await first.exited).remote!.message, /the first message over HTTP must be the `initialize` request/);
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: 0, error: { code: -32603, message: "no thanks" } }));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const agent = new SseRemoteAgent(
      `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/acp`,
      { http: httpClient },
      { onStdout: (b) => lines.push(new TextDecoder().decode(b)), onStdoutEnd() {}, onStderr() {}, onExit() {} },
    );
    agent.write(new TextEncoder().encode('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}\n'));
    const exit = await agent.exited;
    assert.match(lines[0]!, /no thanks/);
    assert.match(exit.remote!.message, /the agent refused initialize/);
    server.close();
  });

/** This machine's first non-loopback IPv4 address, if it has one. */
function networkAddress(): string | undefined {
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  }
  return undefined;
}

test(
  "remote: a token is not sent in clear to a host that is not this machine unless allowed (acp.remote.allowInsecure)",
  { skip: skipEngine },
  async (t) => {
    const address = networkAddress();
    if (!address) return t.skip("no non-loopback address");
    // A listener on this machine's network address: reached only if the token is sent.
    const seen: string[] = [];
    const srv = http.createServer();
    srv.on("upgrade", (req, socket) => {
      seen.push(String(req.headers.authorization));
      socket.destroy();
    });
    await new Promise<void>((r) => srv.listen(0, address, r));
    const port = (srv.address() as net.AddressInfo).port;
    try {
      const { start } = setup();
      for (const scheme of ["ws", "http"]) {
        const url: string = `${scheme}://${address}:${port}/acp`;
        const refused: Error = await start(url, "secret-token").then(
          () => assert.fail("connected"),
          (e: unknown) => e as Error,
        );
        assert.ok(refused instanceof AgentStartError, String(refused));
        assert.match(refused.message, /in clear/);
        assert.match(refused.message, /acp\.remote\.allowInsecure/);
        assert.ok(!refused.message.includes("secret-token"), "the message does not repeat the token");
        assert.equal(AgentConnection.tokenRefusal(E, url, false), refused.message.slice("remote: ".length));
      }
      assert.deepEqual(seen, [], "nothing reached the server");
      // Allowed knowingly: the WebSocket handshake carries the token.
      await start(`ws://${address}:${port}/acp`, "secret-token", undefined, true).then(
        () => assert.fail("connected to a server that closed"),
        () => {},
      );
      assert.deepEqual(seen, ["Bearer secret-token"]);
      // Loopback needs no permission.
      assert.equal(AgentConnection.tokenRefusal(E, `ws://127.0.0.1:${port}/acp`, false), undefined);
      assert.equal(AgentConnection.tokenRefusal(E, `wss://${address}:${port}/acp`, false), undefined);
    } finally {
      srv.close();
    }
  },
);
