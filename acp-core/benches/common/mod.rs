//! Shared inputs of the benchmarks.

/// `n` `session/update` notifications (agent message chunks of ~`text_len` bytes), one per line.
pub fn session_updates(n: usize, text_len: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..n {
        let text: String = "lorem ipsum dolor sit amet "
            .chars()
            .cycle()
            .take(text_len)
            .collect();
        out.extend_from_slice(
            format!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"sess-{}","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{} {}"}}}}}}}}"#,
                i % 4,
                text,
                i
            )
            .as_bytes(),
        );
        out.push(b'\n');
    }
    out
}

/// Feeds `buf` in chunks of this size (a typical pipe read).
pub const CHUNK: usize = 64 * 1024;
