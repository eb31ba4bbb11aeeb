//! acp-native/API.md's client host, `acp-native/examples/client.rs`, compiled here as a module
//! (the same file, not a copy) and run against the real `acp demo-agent`: one streamed turn, in
//! which the host answers the agent's `fs/read_text_file` (the demo agent reads the file the
//! prompt names), its `session/request_permission` (`allow_once`) and its
//! `fs/write_text_file` (the file is on disk afterwards). scripts/test-api-md.sh also builds
//! the example from API.md's own text in a new project and runs it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use acp_native::process::AgentCommand;
use acp_native::schema::v1 as s;

#[allow(dead_code)] // the example's `main` is not called here
#[path = "../../acp-native/examples/client.rs"]
mod client_example;

#[tokio::test]
async fn the_api_md_client_host_streams_a_demo_agent_turn_and_answers_its_requests() {
    let dir = TempDir::new("client-host");
    std::fs::write(
        dir.path().join("notes.txt"),
        "first line of the notes\nsecond\n",
    )
    .unwrap();
    let updates: Arc<Mutex<Vec<s::SessionUpdate>>> = Arc::default();
    let seen = updates.clone();

    let agent = AgentCommand::new(env!("CARGO_BIN_EXE_acp")).arg("demo-agent");
    let prompt = "what is in notes.txt?";
    let stop = client_example::run_turn(agent, dir.path(), prompt, move |update| {
        seen.lock().unwrap().push(update.clone())
    })
    .await
    .expect("the turn runs");
    assert_eq!(stop, s::StopReason::EndTurn);

    // The answer streamed in several chunks, every one of them seen before run_turn returned
    // (it waits for the notification handler), the last one included.
    let updates = updates.lock().unwrap();
    let chunks: Vec<&str> = updates
        .iter()
        .filter_map(|update| match update {
            s::SessionUpdate::AgentMessageChunk(s::ContentChunk {
                content: s::ContentBlock::Text(text),
                ..
            }) => Some(text.text.as_str()),
            _ => None,
        })
        .collect();
    assert!(chunks.len() > 3, "{chunks:?}");
    let text = chunks.concat();
    assert!(
        text.starts_with("Hello from the acp demo agent. You said: \"what is in notes.txt?\"."),
        "{text}"
    );
    let wrote = format!("\nI wrote acp-demo.txt in {}.", dir.path().display());
    assert!(text.ends_with(&wrote), "{text}");

    // fs/read_text_file was answered with the file's text: the demo agent's read tool call
    // reports its lines and first line.
    let json = serde_json::to_string(&*updates).unwrap();
    assert!(
        json.contains("2 line(s); first line: first line of the notes"),
        "{json}"
    );
    // The permission was answered allow_once, and fs/write_text_file wrote the file.
    let written = std::fs::read_to_string(dir.path().join("acp-demo.txt")).expect("written");
    assert_eq!(
        written,
        format!("The acp demo agent was asked:\n\n{prompt}\n")
    );
}

/// A directory of its own under the system's temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let dir =
            std::env::temp_dir().join(format!("acp-api-{name}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
