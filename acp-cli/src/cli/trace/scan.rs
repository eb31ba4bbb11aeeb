//! Reading the start of a JSON object whose end is not there (a line longer than the index
//! reads whole, a line the extension cut): its top-level members up to the first one that
//! does not end within the text. Written once more in `trace-viewer/model.js` (`members`).

/// The complete top-level members of the object `text` starts, in order, as (key, value as
/// written). Stops at the first member whose key or value does not end within `text`, and
/// reads nothing from anything but an object.
pub fn members(text: &str) -> Vec<(String, &str)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return out;
    }
    i += 1;
    loop {
        i = skip_ws(b, i);
        match b.get(i) {
            Some(b'"') => {}
            _ => return out,
        }
        let Some(key_end) = string_end(b, i) else {
            return out;
        };
        let Ok(key) = serde_json::from_str::<String>(&text[i..key_end]) else {
            return out;
        };
        i = skip_ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return out;
        }
        i = skip_ws(b, i + 1);
        let Some(value_end) = value_end(b, i) else {
            return out;
        };
        out.push((key, &text[i..value_end]));
        i = skip_ws(b, value_end);
        match b.get(i) {
            Some(b',') => i += 1,
            _ => return out,
        }
    }
}

/// A member's value as a string, when it is a JSON string.
pub fn string_value(raw: &str) -> Option<String> {
    serde_json::from_str::<String>(raw).ok()
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// The end (exclusive) of the string starting at `i` (a `"`), if it ends within `b`.
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
}

/// The end (exclusive) of the value starting at `i`, if it ends within `b`. A scalar ends at
/// the first delimiter after it; one running to the end of `b` may go on, so it does not end.
fn value_end(b: &[u8], i: usize) -> Option<usize> {
    match b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = string_end(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                j += 1;
            }
            (j < b.len() && j > i).then_some(j)
        }
    }
}
