// Validation of the responses a peer sends, with the SDK's own generated zod schemas.
//
// The SDK validates the params of every request and notification it receives, but not the
// results of the responses it receives. This fills that gap for the interop tests: each side
// remembers the method of every request it sends and checks the matching response against the
// stable v1 schema (`z<Name>Response`), plus the JSON-RPC envelope of every received message.
//
// The zod schemas are not a public export of the SDK, so they are imported by file path; the
// SDK version is pinned by package-lock.json.

const zod = await import(new URL("./node_modules/@agentclientprotocol/sdk/dist/v1/schema/zod.gen.js", import.meta.url));

const RESPONSE_SCHEMAS = {
  "initialize": "zInitializeResponse",
  "authenticate": "zAuthenticateResponse",
  "session/new": "zNewSessionResponse",
  "session/load": "zLoadSessionResponse",
  "session/prompt": "zPromptResponse",
  "session/set_mode": "zSetSessionModeResponse",
  "session/set_config_option": "zSetSessionConfigOptionResponse",
  "session/request_permission": "zRequestPermissionResponse",
  "fs/read_text_file": "zReadTextFileResponse",
  "fs/write_text_file": "zWriteTextFileResponse",
  "terminal/create": "zCreateTerminalResponse",
  "terminal/output": "zTerminalOutputResponse",
  "terminal/wait_for_exit": "zWaitForTerminalExitResponse",
  "terminal/kill": "zKillTerminalResponse",
  "terminal/release": "zReleaseTerminalResponse",
};

/** Checks one response `result` for `method`; returns a list of problems (empty: valid). */
export function checkResult(method, result) {
  const name = RESPONSE_SCHEMAS[method];
  if (!name) return [];
  const parsed = zod[name].safeParse(result);
  return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join(".") || "(result)"}: ${i.message}`);
}

/**
 * A checker fed with every message sent and received on one connection. Violations are
 * collected in `violations` as { method, id, problems, message }.
 */
export function responseChecker() {
  const sentRequests = new Map(); // JSON.stringify(id) -> method
  const violations = [];
  const record = (method, id, problems, message) => {
    if (problems.length > 0) violations.push({ method, id, problems, message: JSON.stringify(message).slice(0, 500) });
  };
  return {
    violations,
    sent(message) {
      if (message && typeof message.method === "string" && "id" in message) {
        sentRequests.set(JSON.stringify(message.id), message.method);
      }
    },
    received(message) {
      const envelope = [];
      if (message?.jsonrpc !== "2.0") envelope.push(`jsonrpc: expected "2.0", got ${JSON.stringify(message?.jsonrpc)}`);
      if (message && !("method" in message)) {
        // A response.
        const key = JSON.stringify(message.id);
        const method = sentRequests.get(key) ?? null;
        sentRequests.delete(key);
        // `id: null` with an error is JSON-RPC's answer to a message the peer could not read
        // (-32700 / -32600), e.g. after a garbage line: legitimate, not tied to a request.
        const unreadable = message.id === null && "error" in message;
        if (method === null && !unreadable) envelope.push(`a response to no request of ours (id ${key})`);
        const hasResult = "result" in message;
        const hasError = "error" in message;
        if (hasResult === hasError) envelope.push("a response needs exactly one of result and error");
        if (hasError) {
          const e = message.error;
          if (!Number.isInteger(e?.code)) envelope.push("error.code must be an integer");
          if (typeof e?.message !== "string") envelope.push("error.message must be a string");
        }
        record(method, message.id, envelope, message);
        if (hasResult && method) record(method, message.id, checkResult(method, message.result), message);
      } else {
        record(message?.method ?? null, message?.id ?? null, envelope, message);
      }
    },
  };
}

/** Wraps an ACP message Stream so that `checker` sees every message both ways. */
export function checkedMessages(checker, stream) {
  const tap = (f) => new TransformStream({
    transform(message, controller) {
      f(message);
      controller.enqueue(message);
    },
  });
  const out = tap((m) => checker.sent(m));
  out.readable.pipeTo(stream.writable).catch(() => {});
  return { readable: stream.readable.pipeThrough(tap((m) => checker.received(m))), writable: out.writable };
}
