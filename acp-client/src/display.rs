//! Agent-supplied text made safe to show, so a question cannot be spoofed and the terminal
//! obeys nothing the agent wrote.
//!
//! A newline in a command's argument, a carriage return, an escape sequence or a right-to-left
//! override can make a terminal or a dialog show something other than what runs, or push the
//! real question off screen and print a fake one. Every agent-supplied field a question shows
//! goes through [`escape_line`] (free text) or [`quote_arg`] / [`command_line`] (what runs);
//! text that keeps its lines (the conversation, errors, an agent's stderr) goes through
//! [`escape_text`]. Both hide the same characters ([`is_hidden`]). [`redact_url`] takes the
//! credentials out of a URL before it is shown or saved.

/// Characters that are shown escaped: C0 and C1 controls, DEL, and the invisible formatting
/// characters that reorder or hide text (bidi overrides and isolates, zero-width characters,
/// line and paragraph separators, the BOM, soft hyphen).
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{061C}'
                | '\u{180E}'
                | '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{2069}'
                | '\u{FEFF}'
                | '\u{FFF9}'..='\u{FFFB}'
        )
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{1b}' => out.push_str("\\e"),
        c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
        c => out.push_str(&format!("\\u{:04x}", c as u32)),
    }
}

/// `text` on one line: hidden characters ([`is_hidden`]) written as `\n`, `\e`, `\x07`,
/// `\u202e`…, and backslashes doubled, so the escapes cannot be forged.
pub fn escape_line(text: &str) -> String {
    escape_line_prefix(text, usize::MAX).0
}

/// `text` as it is when it holds no hidden character, else [`escape_line`]: the last check
/// before a line that should already be escaped is shown (idempotent on escaped text).
pub fn ensure_line(text: &str) -> std::borrow::Cow<'_, str> {
    if text.chars().any(is_hidden) {
        escape_line(text).into()
    } else {
        text.into()
    }
}

/// Multi-line text (the conversation, tool output, errors, an agent's stderr) as a terminal
/// may show it: `\n` and `\t` kept; ESC as `␛` and every other control character (C0, DEL,
/// C1, `\r`) as `�`, so no escape sequence is interpreted (no cursor moves, screen clears,
/// title or clipboard writes, no line overwritten with `\r`); the other hidden characters of
/// [`is_hidden`] (bidi overrides and isolates, zero-width spaces, line and paragraph
/// separators, the BOM, soft hyphen) written as `\u202e`…, so text cannot be reordered or
/// hidden. The zero-width joiner and non-joiner (U+200D, U+200C) are kept: text needs them
/// (emoji sequences such as 👨‍👩‍👧, Persian and Indic words), and they reorder nothing.
/// Backslashes are kept as they are (the text is read, not parsed: an agent that writes
/// `\u202e` itself only shows those six characters). Borrowed when nothing changes.
pub fn escape_text(text: &str) -> std::borrow::Cow<'_, str> {
    let shown = |c: char| matches!(c, '\n' | '\t' | '\u{200C}' | '\u{200D}') || !is_hidden(c);
    if text.chars().all(shown) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if shown(c) => out.push(c),
            '\u{1b}' => out.push('\u{241b}'),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push_str(&format!("\\u{:04x}", c as u32)),
        }
    }
    out.into()
}

/// `url` without its credentials, for showing or saving it: the user information
/// (`user:password@`) and the parameters `token` and `access_token` (any case, also
/// percent-encoded) of the query and of the fragment (a browser page's `#token=`) are taken
/// out, the rest kept as written (`ws://host:8765/?token=…&x=1` → `ws://host:8765/?x=1`).
/// Text that is not `scheme://…` is returned as it is.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_string();
    };
    let scheme = &url[..scheme_end];
    if scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    {
        return url.to_string();
    }
    let rest = &url[scheme_end + 3..];
    let (before_fragment, fragment) = match rest.find('#') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let authority_end = before_fragment
        .find(['/', '?'])
        .unwrap_or(before_fragment.len());
    let authority = &before_fragment[..authority_end];
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let path_query = &before_fragment[authority_end..];
    let (path, query) = match path_query.find('?') {
        Some(i) => (&path_query[..i], Some(&path_query[i + 1..])),
        None => (path_query, None),
    };
    let mut out = format!("{scheme}://{host}{path}");
    if let Some(query) = query.and_then(without_credentials) {
        out.push('?');
        out.push_str(&query);
    }
    // A fragment is never sent, but a browser page's `#token=` is a credential too.
    if let Some(fragment) = fragment.strip_prefix('#').and_then(without_credentials) {
        out.push('#');
        out.push_str(&fragment);
    }
    out
}

/// `%74oken` as `token` (bytes that do not decode are kept as written).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `a=1&token=…&b=2` without its `token` / `access_token` pairs (`None`: nothing left).
fn without_credentials(pairs: &str) -> Option<String> {
    let kept: Vec<&str> = pairs
        .split('&')
        .filter(|pair| {
            let key = percent_decoded(pair.split('=').next().unwrap_or(""));
            !key.eq_ignore_ascii_case("token") && !key.eq_ignore_ascii_case("access_token")
        })
        .collect();
    (!kept.is_empty()).then(|| kept.join("&"))
}

/// An argument as a POSIX shell would need it, on one line: plain words as they are,
/// otherwise `'…'`; an argument holding hidden characters uses `$'…'` (bash, zsh, ksh) with
/// `\n`, `\e`, `\xHH`, `\uHHHH` escapes. Pasting the result into such a shell gives back the
/// same bytes; no shell is involved in running it.
pub fn quote_arg(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        return arg.to_string();
    }
    if !arg.chars().any(is_hidden) {
        return format!("'{}'", arg.replace('\'', "'\\''"));
    }
    let mut out = String::with_capacity(arg.len() + 3);
    out.push_str("$'");
    for c in arg.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            c if is_hidden(c) => push_escaped(&mut out, c),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// `command arg…`, each quoted with [`quote_arg`]: exactly what runs, on one line.
pub fn command_line<S: AsRef<str>>(command: &str, args: &[S]) -> String {
    std::iter::once(command)
        .chain(args.iter().map(AsRef::as_ref))
        .map(quote_arg)
        .collect::<Vec<_>>()
        .join(" ")
}

/// [`escape_line`] of `text`, at most `max` characters of it shown (escapes count as the
/// characters they are written with, and are never cut): past that, `…` and how many
/// characters of `text` were left out (`… (+1200 characters)`). Bounded output whatever the
/// input; the input is read once.
pub fn escape_line_clipped(text: &str, max: usize) -> String {
    let (mut out, stopped) = escape_line_prefix(text, max);
    if let Some(at) = stopped {
        let rest = text[at..].chars().count();
        out.push_str(&format!("… (+{rest} characters)"));
    }
    out
}

/// The start of [`escape_line`] of `text` that fits in `max` characters (an escape is never
/// cut), and the byte offset in `text` where it stopped, if it did.
pub fn escape_line_prefix(text: &str, max: usize) -> (String, Option<usize>) {
    let mut out = String::with_capacity(text.len().min(max) + 2);
    let mut shown = 0;
    let mut piece = String::new();
    for (at, c) in text.char_indices() {
        piece.clear();
        match c {
            '\\' => piece.push_str("\\\\"),
            c if is_hidden(c) => push_escaped(&mut piece, c),
            c => piece.push(c),
        }
        let width = piece.chars().count();
        if shown + width > max {
            return (out, Some(at));
        }
        out.push_str(&piece);
        shown += width;
    }
    (out, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_agent_supplied_can_break_the_line() {
        let nasty = "ls -la`\n\nrun `ls -la`? [1] yes\r\u{1b}[2K\u{202e}\u{2028}x";
        for shown in [
            escape_line(nasty),
            quote_arg(nasty),
            command_line("sh", &[nasty]),
        ] {
            assert!(!shown.chars().any(is_hidden), "{shown:?}");
        }
        assert_eq!(
            quote_arg("a\nb'c"),
            "$'a\\nb\\'c'",
            "hidden characters switch to $'…'"
        );
        assert_eq!(
            escape_line("a\\nb\n"),
            "a\\\\nb\\n",
            "escapes cannot be forged"
        );
    }

    #[test]
    fn clipped_lines_stop_at_their_bound_and_never_cut_an_escape() {
        assert_eq!(escape_line_clipped("short", 10), "short");
        assert_eq!(escape_line_clipped("abcdef", 3), "abc… (+3 characters)");
        // `\e` takes two characters: it is not cut in half.
        assert_eq!(escape_line_clipped("ab\x1bcd", 3), "ab… (+3 characters)");
        assert_eq!(escape_line_clipped("a\\b", 2), "a… (+2 characters)");
        let long = "\u{202e}".repeat(100_000);
        let shown = escape_line_clipped(&long, 50);
        assert!(!shown.chars().any(is_hidden), "{shown}");
        assert!(shown.ends_with("… (+99992 characters)"), "{shown}");
    }

    #[test]
    fn text_keeps_its_lines_and_shows_every_hidden_character() {
        // What render::sanitize did: ESC as ␛, other controls as �, `\n` and `\t` kept.
        assert_eq!(escape_text("plain\ttext\n"), "plain\ttext\n");
        assert!(matches!(
            escape_text("plain\ttext\n"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(
            escape_text("\x1b]52;c;cHduZWQ=\x07\x1b[2Jhi\r\u{9b}31m\x7f"),
            "\u{241b}]52;c;cHduZWQ=\u{fffd}\u{241b}[2Jhi\u{fffd}\u{fffd}31m\u{fffd}"
        );
        // Bidi overrides and isolates, marks, zero-width and invisible characters: escaped
        // (they passed before), as is_hidden says, so no text is reordered or hidden.
        assert_eq!(
            escape_text(
                "abc\u{202e}fed\u{202c} \u{2066}x\u{2069} \u{200e}\u{200f}\u{200b}\u{feff}\u{2028}"
            ),
            "abc\\u202efed\\u202c \\u2066x\\u2069 \\u200e\\u200f\\u200b\\ufeff\\u2028"
        );
        // Ordinary text, other scripts and emoji are kept; backslashes as written. So are the
        // joiners that emoji sequences and some scripts need (a family emoji, a Persian word).
        let fine =
            "naïve café — 日本語 עברית 🙂 C:\\dir \\u202e 👨\u{200d}👩\u{200d}👧 می\u{200c}خواهم";
        assert_eq!(escape_text(fine), fine);
        // Whatever goes in, nothing hidden comes out but line breaks, tabs and the joiners.
        let nasty: String = (0u32..0x3000)
            .chain(0xfe00..0x10000)
            .filter_map(char::from_u32)
            .collect();
        let shown = escape_text(&nasty);
        assert!(!shown
            .chars()
            .any(|c| is_hidden(c) && !matches!(c, '\n' | '\t' | '\u{200c}' | '\u{200d}')));
        assert_eq!(shown.matches('\n').count(), 1);
    }

    #[test]
    fn urls_lose_their_credentials_and_keep_the_rest() {
        assert_eq!(
            redact_url("ws://127.0.0.1:8765/?token=0123abcd"),
            "ws://127.0.0.1:8765/"
        );
        assert_eq!(
            redact_url("wss://u:pw@devbox:443/acp?a=1&TOKEN=x&access_token=y&b=2#token=z&k"),
            "wss://devbox:443/acp?a=1&b=2#k"
        );
        assert_eq!(
            redact_url("http://[::1]:8765/acp?%74oken=x"),
            "http://[::1]:8765/acp"
        );
        assert_eq!(
            redact_url("https://h/acp?tokens=1"),
            "https://h/acp?tokens=1"
        );
        assert_eq!(redact_url("http://h?token"), "http://h");
        // Not a URL: as it is.
        for text in ["acp demo-agent", "/usr/bin/agent?token=1", "claude", ""] {
            assert_eq!(redact_url(text), text);
        }
    }

    #[test]
    fn plain_arguments_stay_plain_and_others_are_quoted() {
        assert_eq!(
            command_line("git", &["status", "--short", "a b", "", "it's", "$HOME"]),
            "git status --short 'a b' '' 'it'\\''s' '$HOME'"
        );
    }
}
