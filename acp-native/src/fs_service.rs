//! Client-side file-system service (`fs/read_text_file`, `fs/write_text_file`).
