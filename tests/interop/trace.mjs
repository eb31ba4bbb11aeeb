// Wire tracing shared by ts-client.mjs and ts-agent.mjs: a pass-through byte stream that appends
// each complete NDJSON line to a file with a direction prefix, for precise interop bug reports.

import * as fs from "node:fs";

/** Returns a TransformStream<Uint8Array> copying lines to `file` as `${prefix}${line}`; a no-op without `file`. */
export function traced(file, prefix) {
  if (!file) return new TransformStream();
  let pending = "";
  const decoder = new TextDecoder();
  return new TransformStream({
    transform(chunk, controller) {
      pending += decoder.decode(chunk, { stream: true });
      const lines = pending.split("\n");
      pending = lines.pop();
      for (const line of lines) fs.appendFileSync(file, `${prefix}${line}\n`);
      controller.enqueue(chunk);
    },
    flush() {
      if (pending) fs.appendFileSync(file, `${prefix}${pending} (no newline before EOF)\n`);
    },
  });
}

/** Wraps an ACP message Stream ({ readable, writable } of JSON-RPC objects) so that every
 * message is appended to `file` ("-> " sent, "<- " received); returns `stream` without `file`. */
export function tracedMessages(file, stream) {
  if (!file) return stream;
  const tap = (prefix) => new TransformStream({
    transform(message, controller) {
      fs.appendFileSync(file, `${prefix}${JSON.stringify(message)}\n`);
      controller.enqueue(message);
    },
  });
  const out = tap("-> ");
  out.readable.pipeTo(stream.writable).catch(() => {});
  return { readable: stream.readable.pipeThrough(tap("<- ")), writable: out.writable };
}
