//! Agent-supplied text on one line, so a question cannot be spoofed.
//!
//! A newline in a command's argument, a carriage return, an escape sequence or a right-to-left
//! override can make a terminal or a dialog show something other than what runs, or push the
//! real question off screen and print a fake one. Every agent-supplied field a question shows
//! goes through [`escape_line`] (free text) or [`quote_arg`] / [`command_line`] (what runs).

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
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            c if is_hidden(c) => push_escaped(&mut out, c),
            c => out.push(c),
        }
    }
    out
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
    fn plain_arguments_stay_plain_and_others_are_quoted() {
        assert_eq!(
            command_line("git", &["status", "--short", "a b", "", "it's", "$HOME"]),
            "git status --short 'a b' '' 'it'\\''s' '$HOME'"
        );
    }
}
