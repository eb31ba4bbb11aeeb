//! Notifications queued behind a slow notification handler are bounded in bytes, not only in
//! number (`DriverConfig::notification_bytes`): 1024 queued notifications of 60 MB each would
//! be 60 GB.

mod rpc_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use acp_core::{ErrorObject, Role};
use acp_native::{driver, transport, DriverConfig, Incoming};
use rpc_support::eventually;
use tokio::io::AsyncWriteExt;

/// A peer writes 1 MiB notifications while the handler is stuck on the first: reading pauses
/// once 4 MiB of them are queued (the peer's writes then block), and resumes as they are
/// handled; every one is handled in the end.
#[tokio::test(start_paused = true)]
async fn queued_notifications_are_bounded_in_bytes() {
    const N: usize = 40;
    let ((ar, aw), (_pr, mut pw)) = transport::duplex(64 << 10);
    let (open_tx, open_rx) = tokio::sync::watch::channel(false);
    let handled = Arc::new(AtomicUsize::new(0));
    let service = tower::service_fn({
        let handled = handled.clone();
        move |_req: Incoming| {
            let (mut open, handled) = (open_rx.clone(), handled.clone());
            async move {
                let _ = open.wait_for(|open| *open).await;
                handled.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ErrorObject>(serde_json::value::to_raw_value(&()).unwrap())
            }
        }
    });
    let config = DriverConfig::new(Role::Agent).notification_bytes(4 << 20);
    let _agent = driver::spawn(ar, aw, service, config);
    let written = Arc::new(AtomicUsize::new(0));
    let writer = tokio::spawn({
        let written = written.clone();
        async move {
            let note = format!(
                "{{\"jsonrpc\":\"2.0\",\"method\":\"_n\",\"params\":{{\"p\":\"{}\"}}}}\n",
                "x".repeat(1 << 20)
            );
            for _ in 0..N {
                pw.write_all(note.as_bytes()).await.unwrap();
                written.fetch_add(1, Ordering::SeqCst);
            }
            pw
        }
    });
    // Paused time only advances when every task is idle: this elapses iff the writer is stuck.
    tokio::time::sleep(Duration::from_secs(3600)).await;
    let n = written.load(Ordering::SeqCst);
    // The one being handled, 4 MiB queued, one in the engine's line buffer, the pipe.
    assert!(
        n >= 4,
        "reading paused too early ({n} notifications written)"
    );
    assert!(
        n <= 4 + 3,
        "{n} notifications of 1 MiB were read behind a stuck handler"
    );
    open_tx.send_replace(true);
    let _pw = eventually("the writer", writer).await.unwrap();
    eventually("every notification handled", async {
        while handled.load(Ordering::SeqCst) < N {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}
