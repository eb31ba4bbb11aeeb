//! The tap's tests: the log's lines and kinds, the private log file, the bounded table of
//! pending requests, lines cut as the engine cuts them.

use super::pending::MAX_PENDING;
use super::*;

/// The log is private: created 0600; an existing file of ours tightened and truncated;
/// a symbolic link planted at the path refused, its target untouched.
#[test]
fn the_log_file_is_private_and_never_followed_through_a_link() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("acp-rpc-private-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;

    let new = dir.join("new.ndjson");
    drop(Tap::new(&new, 1 << 20).unwrap());
    assert_eq!(mode(&new), 0o600, "a new log");

    let old = dir.join("old.ndjson");
    std::fs::write(&old, "what an earlier run logged").unwrap();
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
    drop(Tap::new(&old, 1 << 20).unwrap());
    assert_eq!(mode(&old), 0o600, "an existing log is tightened");
    assert_eq!(std::fs::read(&old).unwrap(), b"", "and truncated");

    let target = dir.join("victim");
    std::fs::write(&target, "keep me").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
    let link = dir.join("link.ndjson");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let err = Tap::new(&link, 1 << 20).err().expect("a link is refused");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert!(err.to_string().contains("link.ndjson"), "{err}");
    // A dangling link is not followed to create a file either.
    let dangling = dir.join("dangling.ndjson");
    std::os::unix::fs::symlink(dir.join("created-through-the-link"), &dangling).unwrap();
    assert!(Tap::new(&dangling, 1 << 20).is_err());
    assert!(!dir.join("created-through-the-link").exists());
    assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
    assert_eq!(mode(&target), 0o644);

    // A hard link to another file is not truncated through.
    let hard = dir.join("hard.ndjson");
    std::fs::hard_link(&target, &hard).unwrap();
    let err = Tap::new(&hard, 1 << 20).err().expect("refused");
    assert!(err.to_string().contains("hard link"), "{err}");
    assert_eq!(std::fs::read(&target).unwrap(), b"keep me");

    // Not a regular file.
    let fifo = dir.join("fifo.ndjson");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    assert!(Tap::new(&fifo, 1 << 20).is_err());
    assert!(Tap::new(&dir, 1 << 20).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn lines_split_anywhere_are_logged_with_response_times() {
    let dir = std::env::temp_dir().join(format!("acp-rpc-log-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("log.ndjson");
    let tap = Tap::new(&path, 1 << 20).unwrap();
    tap.bytes(
        Dir::Send,
        br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#,
    );
    tap.bytes(Dir::Send, b"\n");
    let reply = br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}
not json
"#;
    for b in reply.chunks(7) {
        tap.bytes(Dir::Recv, b);
    }
    tap.bytes(
        Dir::Recv,
        br#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#,
    );
    tap.eof(Dir::Recv);
    let log = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{log}");
    assert_eq!(lines[0]["kind"], "request");
    assert_eq!(lines[1]["kind"], "response");
    assert_eq!(lines[1]["method"], "initialize");
    assert!(lines[1]["elapsedMs"].as_f64().unwrap() >= 0.0);
    assert_eq!(lines[2]["kind"], "invalid");
    assert_eq!(lines[2]["line"], "not json");
    assert_eq!(lines[3]["kind"], "notification");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Messages are read only as far as the log needs: any JSON object is read (odd members,
/// escapes), `id: null` is not a notification, a batch is logged entry by entry, and `msg` is
/// the message exactly as written. What the engine refuses to read (a value that is not an
/// object, a member given twice) is logged `invalid` with why.
#[test]
fn envelopes_are_read_from_the_line_as_written() {
    let dir = std::env::temp_dir().join(format!("acp-rpc-env-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("log.ndjson");
    let tap = Tap::new(&path, 1 << 20).unwrap();
    let junk = vec!["0"; 100_000].join(",");
    let lines = [
        // An update with a large member the tap never looks into.
        format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s"}},"junk":[{junk}]}}"#
        ),
        // Not an update: it has an id (null).
        r#"{"jsonrpc":"2.0","id":null,"method":"session/update"}"#.to_owned(),
        // Escapes in the method, a nested `method`, a non-string method.
        r#"{"id":"b","method":"session\/update","x":{"method":"no"}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","method":5}"#.to_owned(),
        r#"[{"jsonrpc":"2.0","method":"session/update"}, 7, {"id":"b","result":{}}]"#.to_owned(),
        // A member given twice: ambiguous, refused by the engine (not an update).
        r#"{"jsonrpc":"2.0","method":"session/update","id":1,"id":2}"#.to_owned(),
    ];
    for l in &lines {
        tap.bytes(Dir::Recv, format!("{l}\n").as_bytes());
    }
    let log = std::fs::read_to_string(&path).unwrap();
    let got: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(got.len(), 8, "{log:.500}");
    assert_eq!(got[0]["kind"], "notification");
    assert_eq!(
        got[0]["msg"],
        serde_json::from_str::<serde_json::Value>(&lines[0]).unwrap()
    );
    assert_eq!(got[1]["kind"], "notification");
    assert!(got[1].get("id").is_none());
    assert_eq!(
        (&got[2]["kind"], &got[2]["id"]),
        (&"request".into(), &"b".into())
    );
    assert_eq!(got[2]["method"], "session/update");
    assert_eq!(got[3]["kind"], "response");
    assert_eq!(got[4]["batch"], true);
    assert_eq!(
        (&got[5]["kind"], &got[5]["msg"]),
        (&"invalid".into(), &7.into())
    );
    // The batch's response answers the request "b" above.
    assert_eq!(
        (&got[6]["kind"], &got[6]["id"]),
        (&"response".into(), &"b".into())
    );
    assert_eq!(got[7]["kind"], "invalid");
    assert!(got[7].get("id").is_none() && got[7].get("method").is_none());
    assert_eq!(
        got[7]["msg"],
        serde_json::from_str::<serde_json::Value>(&lines[5]).unwrap()
    );
    assert!(got[7]["why"]
        .as_str()
        .unwrap()
        .contains("duplicate field `id`"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Requests answered with `id: null` (the answer to a request whose id could not be
/// used), never answered, or with ids too long to keep, cannot make the table of requests
/// awaiting a response grow without bound.
#[test]
fn the_table_of_pending_requests_stays_bounded() {
    let dir = std::env::temp_dir().join(format!("acp-rpc-pending-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tap = Tap::new(&dir.join("log.ndjson"), 1 << 20).unwrap();
    for i in 0..20_000 {
        // A batch entry the engine answers with `id: null`...
        let req = format!("[{{\"jsonrpc\":\"1.0\",\"id\":{i},\"method\":\"m\"}}]\n");
        tap.bytes(Dir::Recv, req.as_bytes());
        let err = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"invalid\"}}\n";
        tap.bytes(Dir::Send, err.as_bytes());
        // ...and one of ours the agent never answers.
        let ours = format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"fs/x\"}}\n");
        tap.bytes(Dir::Send, ours.as_bytes());
    }
    let (entries, order) = tap.pending_entries();
    assert!(entries <= 2 * MAX_PENDING, "{entries} requests kept");
    assert!(
        order <= 2 * (4 * MAX_PENDING + 1),
        "{order} order records kept"
    );
    // Still logged: requests, and the `id: null` errors as errors.
    let log = std::fs::read_to_string(dir.join("log.ndjson")).unwrap();
    let last: Vec<serde_json::Value> = log
        .lines()
        .rev()
        .take(3)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(last[0]["kind"], "request", "{log:.300}");
    assert_eq!(last[0]["method"], "fs/x");
    assert_eq!(last[1]["kind"], "error");
    assert_eq!(last[2]["kind"], "request");
    assert_eq!(last[2]["batch"], true);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A valid message longer than any read (and than the old 1 MiB cut) is one message in the
/// log. One over the limit is logged as such (not as "invalid") and the next line is read
/// normally, as the engine does.
#[test]
fn lines_are_cut_as_the_engine_cuts_them() {
    let dir = std::env::temp_dir().join(format!("acp-rpc-cut-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("log.ndjson");
    let limit = 4 << 20;
    let tap = Tap::new(&path, limit).unwrap();
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{\"text\":\"{}\"}}}}\n",
        "x".repeat(3 << 20)
    );
    for chunk in big.as_bytes().chunks(64 << 10) {
        tap.bytes(Dir::Recv, chunk);
    }
    let over = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"{}\"}}\n",
        "y".repeat(limit)
    );
    for chunk in over.as_bytes().chunks(64 << 10) {
        tap.bytes(Dir::Recv, chunk);
    }
    tap.bytes(
        Dir::Recv,
        b"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{}}\n",
    );
    let log = std::fs::read_to_string(&path).unwrap();
    let got: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = got.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["notification", "oversize", "notification"],
        "{log:.300}"
    );
    assert_eq!(got[1]["limit"], limit);
    assert!(got[1]["start"]
        .as_str()
        .unwrap()
        .starts_with("{\"jsonrpc\":\"2.0\",\"id\":1"));
    std::fs::remove_dir_all(&dir).unwrap();
}
