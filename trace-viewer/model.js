// The trace model in JavaScript: what `acp trace`'s server (acp-cli/src/cli/trace/: line.rs,
// index.rs, query.rs, detail.rs, scan.rs) computes, for traces held in memory (the VS Code
// extension's). Same rules, same answers: test/vectors/ holds both to them. It answers the
// viewer's questions (status, summary, rows, locate, message) with the JSON the server sends,
// so the renderer (viewer.js) cannot tell them apart.
//
// Lines are kept as strings; a row refers to its line by number. Bounded by what it is fed
// (the extension keeps at most a few MiB) and by maxRows.

/** @typedef {{method?: string, session?: string, turn?: number, errors?: boolean, minMs?: number, q?: string, group?: boolean}} Filter */
//
// The model is split by concern under model/ (one file per server module it mirrors); this
// module is its public face.

export { CANCEL, CUT, CUT_PREFIX, ERROR, MAX_LINE, PREVIEW_CHARS, utf8Length, utf8Prefix } from "./model/text.js";
export { members } from "./model/scan.js";
export { laneName, parseLine } from "./model/line.js";
export { linePreview, messageOf, preview } from "./model/detail.js";
export { TraceModel, asciiLower, modelSource } from "./model/trace-model.js";
