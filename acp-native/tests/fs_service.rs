//! `fs/read_text_file` and `fs/write_text_file` against a real file system.

mod host_support;

use std::ffi::OsStr;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use std::sync::{Arc, Mutex};

use acp_native::fs_service::{
    AccessScope, FsConfig, FsError, FsService, Sensitive, SensitiveWrite,
};
use agent_client_protocol_schema::v1::{ErrorCode, ReadTextFileRequest, WriteTextFileRequest};
use host_support::TempDir;

/// A workspace root `proj` and a sibling `outside` directory in one temp dir.
struct Fixture {
    tmp: TempDir,
    svc: FsService,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture::with(|c| c)
    }

    fn with(f: impl FnOnce(FsConfig) -> FsConfig) -> Fixture {
        let tmp = TempDir::new();
        std::fs::create_dir(tmp.join("proj")).unwrap();
        std::fs::create_dir(tmp.join("outside")).unwrap();
        let svc = FsService::new(f(FsConfig::new([tmp.join("proj")])));
        Fixture { tmp, svc }
    }

    fn proj(&self, rel: &str) -> PathBuf {
        self.tmp.join("proj").join(rel)
    }

    fn outside(&self, rel: &str) -> PathBuf {
        self.tmp.join("outside").join(rel)
    }

    async fn read(&self, path: impl Into<PathBuf>) -> Result<String, FsError> {
        self.svc
            .read_text_file(ReadTextFileRequest::new("s1", path))
            .await
            .map(|r| r.content)
    }

    async fn read_lines(
        &self,
        path: impl Into<PathBuf>,
        line: Option<u32>,
        limit: Option<u32>,
    ) -> String {
        let req = ReadTextFileRequest::new("s1", path).line(line).limit(limit);
        self.svc.read_text_file(req).await.unwrap().content
    }

    async fn write(&self, path: impl Into<PathBuf>, content: &str) -> Result<(), FsError> {
        self.svc
            .write_text_file(WriteTextFileRequest::new("s1", path, content))
            .await
            .map(|_| ())
    }
}

/// Names in `dir` (sorted), to prove no temporary file was left behind.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn reads_whole_files_and_line_ranges() {
    let fx = Fixture::new();
    let f = fx.proj("a.txt");
    std::fs::write(&f, "one\ntwo\r\nthree\nfour").unwrap();
    assert_eq!(fx.read(&f).await.unwrap(), "one\ntwo\r\nthree\nfour");
    assert_eq!(fx.read_lines(&f, Some(2), Some(2)).await, "two\r\nthree\n");
    assert_eq!(fx.read_lines(&f, Some(1), Some(1)).await, "one\n");
    assert_eq!(fx.read_lines(&f, Some(3), None).await, "three\nfour");
    assert_eq!(fx.read_lines(&f, None, Some(1)).await, "one\n");
    assert_eq!(fx.read_lines(&f, Some(9), Some(1)).await, "");
    assert_eq!(fx.read_lines(&f, Some(1), Some(0)).await, "");
    // 0 is read as the first line.
    assert_eq!(fx.read_lines(&f, Some(0), Some(1)).await, "one\n");
    // Reads are not confined by default.
    std::fs::write(fx.outside("o.txt"), "x").unwrap();
    assert_eq!(fx.read(fx.outside("o.txt")).await.unwrap(), "x");
}

#[tokio::test]
async fn missing_file_is_resource_not_found() {
    let fx = Fixture::new();
    for path in [fx.proj("missing.txt"), fx.proj("nodir/missing.txt")] {
        let err = fx.read(&path).await.unwrap_err();
        assert!(matches!(err, FsError::NotFound { .. }), "{err:?}");
        assert_eq!(err.code(), -32002);
        assert_eq!(
            err.message(),
            format!("Resource not found: {} does not exist", path.display())
        );
        assert_eq!(
            err.data(),
            Some(serde_json::json!({ "path": path.to_str().unwrap(), "reason": "not_found" }))
        );
        let wire = err.to_acp_error();
        assert_eq!(wire.code, ErrorCode::ResourceNotFound);
        let json = serde_json::to_value(&wire).unwrap();
        assert_eq!(json["code"], -32002);
        assert_eq!(json["data"]["path"], path.to_str().unwrap());
    }
    // A regular file used as a directory is "not found" too.
    std::fs::write(fx.proj("file"), "").unwrap();
    let err = fx.read(fx.proj("file/child")).await.unwrap_err();
    assert_eq!(err.code(), -32002, "{err:?}");
}

#[tokio::test]
async fn relative_and_malformed_paths_are_rejected() {
    let fx = Fixture::new();
    for rel in ["a.txt", "./a.txt", "../a.txt", ""] {
        let err = fx.read(rel).await.unwrap_err();
        assert!(
            matches!(err, FsError::RelativePath { .. }),
            "{rel}: {err:?}"
        );
        assert_eq!(err.code(), -32602);
        let err = fx.write(rel, "x").await.unwrap_err();
        assert!(
            matches!(err, FsError::RelativePath { .. }),
            "{rel}: {err:?}"
        );
    }
    let mut bad = fx.proj("").into_os_string().into_vec();
    bad.extend_from_slice(b"bad-\xff-name");
    let bad = PathBuf::from(OsStr::from_bytes(&bad));
    let err = fx.write(&bad, "x").await.unwrap_err();
    assert!(
        matches!(
            err,
            FsError::InvalidPath {
                reason: "not valid UTF-8",
                ..
            }
        ),
        "{err:?}"
    );
    let err = fx.read(&bad).await.unwrap_err();
    assert!(matches!(err, FsError::InvalidPath { .. }), "{err:?}");
    let err = fx.write(fx.proj("nul\0byte"), "x").await.unwrap_err();
    assert!(
        matches!(
            err,
            FsError::InvalidPath {
                reason: "contains a NUL byte",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(listing(&fx.proj("")), Vec::<String>::new());
}

#[tokio::test]
async fn directories_large_and_binary_files_are_refused() {
    let fx = Fixture::with(|c| c.max_read_bytes(16));
    let err = fx.read(fx.proj("")).await.unwrap_err();
    assert!(matches!(err, FsError::IsADirectory { .. }), "{err:?}");
    assert_eq!(err.code(), -32602);

    std::fs::write(fx.proj("big"), "x".repeat(17)).unwrap();
    let err = fx.read(fx.proj("big")).await.unwrap_err();
    assert!(
        matches!(
            err,
            FsError::TooLarge {
                size: 17,
                limit: 16,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(err.code(), -32603);
    assert_eq!(err.data().unwrap()["limit"], 16);
    std::fs::write(fx.proj("fits"), "x".repeat(16)).unwrap();
    assert_eq!(fx.read(fx.proj("fits")).await.unwrap().len(), 16);

    // Devices and FIFOs could block or never end: refused without opening them.
    let fifo = fx.proj("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for special in [fifo, PathBuf::from("/dev/zero")] {
        let err = fx.read(&special).await.unwrap_err();
        assert!(
            matches!(
                err,
                FsError::InvalidPath {
                    reason: "not a regular file",
                    ..
                }
            ),
            "{err:?}"
        );
    }

    std::fs::write(fx.proj("bin"), b"\xff\xfe\x00").unwrap();
    let err = fx.read(fx.proj("bin")).await.unwrap_err();
    assert!(matches!(err, FsError::NotUtf8 { .. }), "{err:?}");

    let err = fx.write(fx.proj(""), "x").await.unwrap_err();
    assert!(matches!(err, FsError::IsADirectory { .. }), "{err:?}");
}

#[tokio::test]
async fn writes_create_replace_and_keep_permissions() {
    let fx = Fixture::new();
    let f = fx.proj("src/deep/new.rs");
    fx.write(&f, "fn main() {}\n").await.unwrap();
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "fn main() {}\n");

    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640)).unwrap();
    fx.write(&f, "héllo").await.unwrap();
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "héllo");
    let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    fx.write(&f, "").await.unwrap();
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "");
    // Round trip through the service.
    fx.write(&f, "a\nb\n").await.unwrap();
    assert_eq!(fx.read_lines(&f, Some(2), None).await, "b\n");
    assert_eq!(listing(&fx.proj("src/deep")), ["new.rs"]);
}

#[tokio::test]
async fn dot_dot_cannot_escape_the_root() {
    let fx = Fixture::new();
    let escape = fx.proj("../outside/evil.txt");
    let err = fx.write(&escape, "x").await.unwrap_err();
    assert!(
        matches!(&err, FsError::OutsideRoots { resolved, .. } if *resolved == fx.outside("evil.txt")),
        "{err:?}"
    );
    assert_eq!(err.code(), -32602);
    assert_eq!(
        err.data().unwrap()["resolved"],
        fx.outside("evil.txt").to_str().unwrap()
    );

    // `..` below a directory that does not exist cannot be resolved physically.
    let err = fx
        .write(fx.proj("newdir/../../outside/evil.txt"), "x")
        .await
        .unwrap_err();
    assert!(matches!(err, FsError::InvalidPath { .. }), "{err:?}");

    // A sibling whose name starts with the root's name is not inside it.
    std::fs::create_dir(fx.tmp.join("proj2")).unwrap();
    let err = fx.write(fx.tmp.join("proj2/x.txt"), "x").await.unwrap_err();
    assert!(matches!(err, FsError::OutsideRoots { .. }), "{err:?}");

    // `..` that stays inside is fine.
    std::fs::create_dir(fx.proj("sub")).unwrap();
    fx.write(fx.proj("sub/../ok.txt"), "ok").await.unwrap();
    assert_eq!(std::fs::read_to_string(fx.proj("ok.txt")).unwrap(), "ok");

    assert_eq!(listing(&fx.outside("")), Vec::<String>::new());
    assert!(!fx.tmp.join("proj2/x.txt").exists());
}

#[tokio::test]
async fn symlinks_cannot_escape_the_root() {
    let fx = Fixture::new();
    std::fs::write(fx.outside("secret.txt"), "original").unwrap();
    std::os::unix::fs::symlink(fx.outside(""), fx.proj("linkdir")).unwrap();
    std::os::unix::fs::symlink(fx.outside("secret.txt"), fx.proj("linkfile")).unwrap();
    std::os::unix::fs::symlink(fx.outside("nothing-here"), fx.proj("dangling")).unwrap();

    let err = fx
        .write(fx.proj("linkdir/evil.txt"), "x")
        .await
        .unwrap_err();
    assert!(matches!(err, FsError::OutsideRoots { .. }), "{err:?}");
    let err = fx
        .write(fx.proj("linkdir/new/deeper.txt"), "x")
        .await
        .unwrap_err();
    assert!(matches!(err, FsError::OutsideRoots { .. }), "{err:?}");
    let err = fx.write(fx.proj("linkfile"), "pwned").await.unwrap_err();
    assert!(matches!(err, FsError::OutsideRoots { .. }), "{err:?}");
    let err = fx.write(fx.proj("dangling"), "x").await.unwrap_err();
    assert!(matches!(err, FsError::InvalidPath { .. }), "{err:?}");

    assert_eq!(
        std::fs::read_to_string(fx.outside("secret.txt")).unwrap(),
        "original"
    );
    assert_eq!(listing(&fx.outside("")), ["secret.txt"]);

    // A symlink that stays inside the root is written through and kept.
    std::fs::write(fx.proj("real.txt"), "old").unwrap();
    std::os::unix::fs::symlink(fx.proj("real.txt"), fx.proj("alias.txt")).unwrap();
    fx.write(fx.proj("alias.txt"), "new").await.unwrap();
    assert_eq!(std::fs::read_to_string(fx.proj("real.txt")).unwrap(), "new");
    assert!(std::fs::symlink_metadata(fx.proj("alias.txt"))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[tokio::test]
async fn confinement_can_be_lifted_or_extended_to_reads() {
    let fx = Fixture::with(|c| c.writes(AccessScope::Anywhere));
    fx.write(fx.outside("allowed.txt"), "yes").await.unwrap();
    assert_eq!(
        std::fs::read_to_string(fx.outside("allowed.txt")).unwrap(),
        "yes"
    );

    let fx = Fixture::new();
    let req = WriteTextFileRequest::new("s1", fx.outside("approved.txt"), "ok");
    fx.svc.write_text_file_unconfined(req).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(fx.outside("approved.txt")).unwrap(),
        "ok"
    );
    assert_eq!(
        fx.svc
            .resolve_write_target(&fx.proj("linkless/../x"))
            .await
            .unwrap_err()
            .code(),
        -32602
    );
    assert_eq!(
        fx.svc.resolve_write_target(&fx.proj("x")).await.unwrap(),
        fx.proj("x")
    );

    let fx = Fixture::with(|c| c.reads(AccessScope::WithinRoots));
    std::fs::write(fx.outside("o.txt"), "x").unwrap();
    std::fs::write(fx.proj("p.txt"), "p").unwrap();
    std::os::unix::fs::symlink(fx.outside("o.txt"), fx.proj("peek")).unwrap();
    assert!(matches!(
        fx.read(fx.outside("o.txt")).await.unwrap_err(),
        FsError::OutsideRoots { .. }
    ));
    assert!(matches!(
        fx.read(fx.proj("peek")).await.unwrap_err(),
        FsError::OutsideRoots { .. }
    ));
    assert_eq!(fx.read(fx.proj("p.txt")).await.unwrap(), "p");
    assert_eq!(
        fx.read(fx.proj("missing")).await.unwrap_err().code(),
        -32002
    );

    // No roots at all: nothing is writable.
    let tmp = TempDir::new();
    let svc = FsService::new(FsConfig::new(Vec::<PathBuf>::new()));
    let err = svc
        .write_text_file(WriteTextFileRequest::new("s", tmp.join("x"), "x"))
        .await
        .unwrap_err();
    assert!(matches!(err, FsError::OutsideRoots { .. }), "{err:?}");
}

/// Readers racing a series of writes only ever see a complete old or new content. A plain
/// truncate-and-write would expose empty or half-written files here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_are_atomic_for_concurrent_readers() {
    let fx = Fixture::new();
    let f = fx.proj("big.txt");
    let size = 512 * 1024;
    fx.write(&f, &"a".repeat(size)).await.unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (f, stop) = (f.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut reads = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) || reads == 0 {
                let content = std::fs::read(&f).unwrap();
                assert_eq!(content.len(), size, "partial file seen");
                let first = content[0];
                assert!(content.iter().all(|&b| b == first), "mixed content seen");
                reads += 1;
            }
            reads
        })
    };
    for i in 0..40 {
        let fill = if i % 2 == 0 { "b" } else { "a" };
        fx.write(&f, &fill.repeat(size)).await.unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let reads = reader.join().expect("reader saw a torn write");
    assert!(reads > 0);
    assert_eq!(listing(&fx.proj("")), ["big.txt"]);
}

/// A write abandoned part-way (its request cancelled, the connection closed, the future
/// dropped) still ends cleanly: the file is complete or untouched, never a temporary file left
/// behind; and `wait_for_writes` lets a process about to exit wait for it. (Before, dropping
/// the future between creating and renaming the temporary file left it there; a fresh-clone CI
/// run of `fault_injection::a_write_interrupted_by_the_agents_crash_is_all_or_nothing` hit it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_write_finishes_or_leaves_nothing() {
    let fx = Fixture::new();
    let size = 32 << 20;
    let content = "w".repeat(size);
    for (i, after) in [0u64, 1, 3, 10, 30].into_iter().enumerate() {
        let f = fx.proj(&format!("abandoned-{i}.txt"));
        let write = fx.write(&f, &content);
        // Dropped after `after` ms, most likely in the middle of writing 32 MiB.
        let _ = tokio::time::timeout(std::time::Duration::from_millis(after), write).await;
        assert!(
            acp_native::fs_service::wait_for_writes(std::time::Duration::from_secs(30)),
            "the write never finished"
        );
        match std::fs::metadata(&f) {
            Ok(m) => assert_eq!(m.len() as usize, size, "a partial file"),
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::NotFound),
        }
    }
    let names = listing(&fx.proj(""));
    assert!(
        names.iter().all(|n| !n.ends_with(".tmp")),
        "temporary files left: {names:?}"
    );
}

/// Exchanges two names atomically (`renameat2(RENAME_EXCHANGE)`): a directory and a symlink
/// swap places with no moment where either name is missing.
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    let a = std::ffi::CString::new(a.as_os_str().as_bytes()).unwrap();
    let b = std::ffi::CString::new(b.as_os_str().as_bytes()).unwrap();
    // SAFETY: two valid NUL-terminated paths; renameat2 reads them and returns.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Escapes seen by [`swap_race`]: reads that returned the outside file, and files that
/// appeared outside the root (written files and temporary files).
#[cfg(target_os = "linux")]
#[derive(Debug, PartialEq)]
struct Escapes {
    reads: usize,
    writes: usize,
    /// The first few names found outside.
    sample: Vec<String>,
}

/// The check-then-use race a security review found: a local process swaps `proj/d` (a real
/// directory) and `proj/s` (a symlink to the outside directory) in a tight loop while the
/// service reads `proj/d/f.txt` and writes `proj/d/w<i>.txt` thousands of times. Confinement
/// that checks a path and then uses it by name lets some of them land outside (the old
/// canonicalize-then-open code leaked hundreds of reads and tens of writes here).
///
/// Stops only after `ops` reads and writes *and* `min_swaps` swaps, whatever the speeds.
#[cfg(target_os = "linux")]
async fn swap_race(configure: impl FnOnce(FsConfig) -> FsConfig, ops: usize) -> Escapes {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    let min_swaps = 1000;
    let fx = Fixture::with(|c| configure(c.reads(AccessScope::WithinRoots)));
    std::fs::create_dir(fx.proj("d")).unwrap();
    std::fs::write(fx.proj("d/f.txt"), "inside").unwrap();
    std::fs::write(fx.outside("f.txt"), "OUTSIDE").unwrap();
    std::os::unix::fs::symlink(fx.outside(""), fx.proj("s")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicUsize::new(0));
    let swapper = {
        let (d, s) = (fx.proj("d"), fx.proj("s"));
        let (stop, swaps) = (stop.clone(), swaps.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                exchange(&d, &s).unwrap();
                swaps.fetch_add(1, Ordering::Relaxed);
            }
            // Leave `d` the directory.
            if std::fs::symlink_metadata(&d)
                .unwrap()
                .file_type()
                .is_symlink()
            {
                exchange(&d, &s).unwrap();
            }
        })
    };
    let mut escapes = Escapes {
        reads: 0,
        writes: 0,
        sample: Vec::new(),
    };
    let mut i = 0;
    while i < ops || swaps.load(Ordering::Relaxed) < min_swaps {
        match fx.read(fx.proj("d/f.txt")).await {
            Ok(content) if content != "inside" => escapes.reads += 1,
            _ => {}
        }
        let _ = fx.write(fx.proj(&format!("d/w{i}.txt")), "written").await;
        i += 1;
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    let leaked: Vec<String> = listing(&fx.outside(""))
        .into_iter()
        .filter(|n| n != "f.txt")
        .collect();
    escapes.writes = leaked.len();
    escapes.sample = leaked.into_iter().take(4).collect();
    // The service still works once the swapping stops, and the outside file is intact.
    assert_eq!(fx.read(fx.proj("d/f.txt")).await.unwrap(), "inside");
    fx.write(fx.proj("d/after.txt"), "after").await.unwrap();
    assert_eq!(
        std::fs::read_to_string(fx.proj("d/after.txt")).unwrap(),
        "after"
    );
    assert_eq!(
        std::fs::read_to_string(fx.outside("f.txt")).unwrap(),
        "OUTSIDE"
    );
    escapes
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_swapped_for_a_symlink_cannot_leak_reads_or_writes() {
    let escapes = swap_race(|c| c, 3000).await;
    assert_eq!(
        escapes,
        Escapes {
            reads: 0,
            writes: 0,
            sample: Vec::new()
        },
        "reads or writes escaped the root through the swapped directory"
    );
}

/// The portable walk (what systems without `openat2`, or with it blocked by seccomp, use) holds
/// under the same race.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_component_walk_is_race_free_too() {
    let escapes = swap_race(|c| c.without_openat2(), 3000).await;
    assert_eq!(
        escapes,
        Escapes {
            reads: 0,
            writes: 0,
            sample: Vec::new()
        },
        "reads or writes escaped the root through the swapped directory"
    );
}

/// Symbolic links and `..` follow the same rules with `openat2` and with the walk: inside the
/// root they are followed (relative or absolute, chained, `..` after a link is the link
/// target's parent), out of it they are refused, loops end, a dangling link is not written
/// through, and a link into another root reaches it.
#[tokio::test]
async fn link_rules_are_the_same_for_both_resolvers() {
    for walk_only in [false, true] {
        let fx = Fixture::with(|c| {
            let c = c.reads(AccessScope::WithinRoots);
            if walk_only {
                c.without_openat2()
            } else {
                c
            }
        });
        let ln = |target: &str, link: &str| {
            std::os::unix::fs::symlink(target, fx.proj(link)).unwrap();
        };
        std::fs::create_dir_all(fx.proj("sub/deeper")).unwrap();
        std::fs::write(fx.proj("sub/deeper/f.txt"), "deep").unwrap();
        std::fs::write(fx.proj("top.txt"), "top").unwrap();
        std::fs::write(fx.outside("secret.txt"), "secret").unwrap();
        ln("sub/deeper", "rel-in");
        ln(fx.proj("sub").to_str().unwrap(), "abs-in");
        ln("rel-in", "chain");
        ln("../outside", "rel-out");
        ln("sub/../../outside/secret.txt", "rel-out-file");
        ln("loop-b", "loop-a");
        ln("loop-a", "loop-b");
        ln("sub/missing.txt", "dangling-in");

        assert_eq!(fx.read(fx.proj("rel-in/f.txt")).await.unwrap(), "deep");
        assert_eq!(
            fx.read(fx.proj("abs-in/deeper/f.txt")).await.unwrap(),
            "deep"
        );
        assert_eq!(fx.read(fx.proj("chain/f.txt")).await.unwrap(), "deep");
        // `..` after a link goes to the parent of where the link leads (`sub`), not back up.
        std::fs::write(fx.proj("sub/s.txt"), "in sub").unwrap();
        assert_eq!(fx.read(fx.proj("rel-in/../s.txt")).await.unwrap(), "in sub");
        assert_eq!(
            fx.read(fx.proj("sub/deeper/../../top.txt")).await.unwrap(),
            "top"
        );

        for escape in [
            "rel-out/secret.txt",
            "rel-out-file",
            "sub/../../outside/secret.txt",
        ] {
            let err = fx.read(fx.proj(escape)).await.unwrap_err();
            assert!(
                matches!(err, FsError::OutsideRoots { .. }),
                "{escape}: {err:?}"
            );
            let err = fx.write(fx.proj(escape), "pwned").await.unwrap_err();
            assert!(
                matches!(err, FsError::OutsideRoots { .. }),
                "{escape}: {err:?}"
            );
        }
        let err = fx
            .write(fx.proj("rel-out/new/deeper.txt"), "x")
            .await
            .unwrap_err();
        assert!(matches!(err, FsError::OutsideRoots { .. }), "{err:?}");

        let err = fx.read(fx.proj("loop-a")).await.unwrap_err();
        assert!(matches!(err, FsError::Io { .. }), "{err:?}");
        let err = fx.write(fx.proj("loop-a/x"), "x").await.unwrap_err();
        assert!(matches!(err, FsError::Io { .. }), "{err:?}");

        let err = fx.write(fx.proj("dangling-in"), "x").await.unwrap_err();
        assert!(
            matches!(
                err,
                FsError::InvalidPath {
                    reason: "goes through a dangling symbolic link",
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(!fx.proj("sub/missing.txt").exists());
        assert_eq!(
            fx.read(fx.proj("dangling-in")).await.unwrap_err().code(),
            -32002
        );

        // Writes through inner links land where the link leads; missing directories below it
        // are created there; the links stay links.
        fx.write(fx.proj("chain/new/n.txt"), "n").await.unwrap();
        assert_eq!(
            std::fs::read_to_string(fx.proj("sub/deeper/new/n.txt")).unwrap(),
            "n"
        );
        fx.write(fx.proj("abs-in/deeper/f.txt"), "rewritten")
            .await
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(fx.proj("sub/deeper/f.txt")).unwrap(),
            "rewritten"
        );
        assert_eq!(
            fx.svc
                .resolve_write_target(&fx.proj("chain/x/y.txt"))
                .await
                .unwrap(),
            fx.proj("sub/deeper/x/y.txt")
        );
        assert!(
            !fx.proj("sub/deeper/x").exists(),
            "resolving created a directory"
        );
        for link in ["rel-in", "abs-in", "chain"] {
            assert!(std::fs::symlink_metadata(fx.proj(link))
                .unwrap()
                .file_type()
                .is_symlink());
        }
        assert_eq!(listing(&fx.outside("")), ["secret.txt"]);
        assert_eq!(
            std::fs::read_to_string(fx.outside("secret.txt")).unwrap(),
            "secret"
        );

        // A link from one root into another reaches it; the first root alone refuses it.
        let tmp = TempDir::new();
        for d in ["a", "b"] {
            std::fs::create_dir(tmp.join(d)).unwrap();
        }
        std::os::unix::fs::symlink(tmp.join("b"), tmp.join("a/to-b")).unwrap();
        let config = FsConfig::new([tmp.join("a"), tmp.join("b")]);
        let svc = FsService::new(if walk_only {
            config.without_openat2()
        } else {
            config
        });
        let req = WriteTextFileRequest::new("s", tmp.join("a/to-b/x.txt"), "x");
        svc.write_text_file(req).await.unwrap();
        assert_eq!(std::fs::read_to_string(tmp.join("b/x.txt")).unwrap(), "x");
        let svc = FsService::new(FsConfig::new([tmp.join("a")]));
        let req = WriteTextFileRequest::new("s", tmp.join("a/to-b/y.txt"), "y");
        let err = svc.write_text_file(req).await.unwrap_err();
        assert!(matches!(err, FsError::OutsideRoots { .. }), "{err:?}");
    }
}

/// What an approver was asked, and what it answers.
#[derive(Clone)]
struct Approver {
    asked: Arc<Mutex<Vec<SensitiveWrite>>>,
}

impl Approver {
    /// A config with an approver answering `yes`, and the record of its questions.
    fn answering(yes: bool) -> (Approver, impl FnOnce(FsConfig) -> FsConfig) {
        let approver = Approver {
            asked: Arc::new(Mutex::new(Vec::new())),
        };
        let asked = approver.asked.clone();
        let configure = move |c: FsConfig| {
            c.sensitive_writes(Arc::new(move |write: SensitiveWrite| {
                asked.lock().unwrap().push(write);
                Box::pin(async move { yes }) as futures::future::BoxFuture<'static, bool>
            }))
        };
        (approver, configure)
    }

    fn questions(&self) -> Vec<SensitiveWrite> {
        self.asked.lock().unwrap().clone()
    }
}

/// The project of the sensitive-write tests: a git directory with a config and an executable
/// hook, `notes -> .git`, an ordinary source file and an executable script.
fn sensitive_project(fx: &Fixture) {
    std::fs::create_dir_all(fx.proj(".git/hooks")).unwrap();
    std::fs::write(fx.proj(".git/config"), "[core]\n").unwrap();
    std::fs::write(fx.proj(".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(
        fx.proj(".git/hooks/pre-commit"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::os::unix::fs::symlink(".git", fx.proj("notes")).unwrap();
    std::fs::create_dir(fx.proj("src")).unwrap();
    std::fs::write(fx.proj("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(fx.proj("run.sh"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(fx.proj("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The sensitive writes: (path requested, real path, reason, content before).
fn sensitive_writes(fx: &Fixture) -> Vec<(PathBuf, PathBuf, Sensitive, Option<&'static str>)> {
    vec![
        (
            fx.proj(".git/config"),
            fx.proj(".git/config"),
            Sensitive::Git,
            Some("[core]\n"),
        ),
        (
            fx.proj(".git/hooks/pre-commit"),
            fx.proj(".git/hooks/pre-commit"),
            Sensitive::Git,
            Some("#!/bin/sh\nexit 0\n"),
        ),
        (
            fx.proj(".vscode/tasks.json"),
            fx.proj(".vscode/tasks.json"),
            Sensitive::Editor,
            None,
        ),
        (
            fx.proj(".envrc"),
            fx.proj(".envrc"),
            Sensitive::Environment,
            None,
        ),
        // Through `notes -> .git`: classified by where it really goes.
        (
            fx.proj("notes/config"),
            fx.proj(".git/config"),
            Sensitive::Git,
            Some("[core]\n"),
        ),
        (
            fx.proj("run.sh"),
            fx.proj("run.sh"),
            Sensitive::Executable,
            Some("#!/bin/sh\n"),
        ),
    ]
}

/// Everything in the project as (relative path, content, mode), to prove nothing was touched.
fn snapshot(fx: &Fixture) -> Vec<(String, String, u32)> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<(String, String, u32)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
            if m.is_dir() {
                out.push((rel, "<dir>".into(), m.permissions().mode() & 0o777));
                walk(&p, base, out);
            } else if m.file_type().is_symlink() {
                let to = std::fs::read_link(&p).unwrap();
                out.push((rel, format!("-> {}", to.display()), 0));
            } else {
                let text = std::fs::read_to_string(&p).unwrap();
                out.push((rel, text, m.permissions().mode() & 0o777));
            }
        }
    }
    let mut out = Vec::new();
    walk(&fx.proj(""), &fx.proj(""), &mut out);
    out.sort();
    out
}

#[tokio::test]
async fn sensitive_writes_without_an_approver_are_refused() {
    let fx = Fixture::new();
    sensitive_project(&fx);
    let before = snapshot(&fx);
    for (path, real, reason, _) in sensitive_writes(&fx) {
        let err = fx.write(&path, "pwned").await.unwrap_err();
        match &err {
            FsError::Refused {
                path: p,
                resolved,
                reason: r,
                asked: false,
            } => {
                assert_eq!((p, resolved, *r), (&path, &real, reason), "{err:?}");
            }
            other => panic!("{}: {other:?}", path.display()),
        }
        assert_eq!(err.code(), -32603);
        let data = err.data().unwrap();
        assert_eq!(data["reason"], "permission_denied");
        assert_eq!(data["path"], path.to_str().unwrap());
        assert_eq!(data["resolved"], real.to_str().unwrap());
        assert_eq!(data["why"], reason.describe());
        assert!(
            err.message().starts_with("permission denied: writing ")
                && err.message().contains(real.to_str().unwrap()),
            "{}",
            err.message()
        );
    }
    // Nothing touched: no content, mode, directory (`.vscode`) or temporary file changed.
    assert_eq!(snapshot(&fx), before);
}

#[tokio::test]
async fn writes_under_the_clients_own_directories_are_asked_about_by_their_real_path() {
    // The client's cache directory is named through a link (`$XDG_CACHE_HOME` = `cache`,
    // `cache -> store`) and does not exist yet: writes into it, by either name, are the
    // user's question; with no one to ask, refused, and nothing created.
    let fx = Fixture::with(|c| {
        let proj = c.roots[0].clone();
        std::fs::create_dir(proj.join("store")).unwrap();
        std::os::unix::fs::symlink("store", proj.join("cache")).unwrap();
        c.own_dirs([proj.join("cache/acp")])
    });
    let real = fx.proj("store/acp/registry.json");
    for path in [
        fx.proj("store/acp/registry.json"),
        fx.proj("cache/acp/registry.json"),
    ] {
        let err = fx.write(&path, "{\"agents\": []}").await.unwrap_err();
        assert!(
            matches!(&err, FsError::Refused { reason: Sensitive::ClientFiles, resolved, asked: false, .. } if resolved == &real),
            "{}: {err:?}",
            path.display()
        );
    }
    assert!(!fx.proj("store/acp").exists());
    // Beside it: an ordinary write.
    fx.write(fx.proj("store/acp-notes.txt"), "x").await.unwrap();
}

#[tokio::test]
async fn sensitive_writes_the_user_refuses_are_not_written() {
    let (approver, configure) = Approver::answering(false);
    let fx = Fixture::with(configure);
    sensitive_project(&fx);
    let before = snapshot(&fx);
    let writes = sensitive_writes(&fx);
    for (path, real, reason, _) in &writes {
        let err = fx.write(path, "pwned").await.unwrap_err();
        assert!(
            matches!(&err, FsError::Refused { asked: true, reason: r, resolved, .. } if r == reason && resolved == real),
            "{}: {err:?}",
            path.display()
        );
        assert_eq!(err.code(), -32603);
        assert_eq!(err.data().unwrap()["reason"], "permission_denied");
        assert_eq!(
            err.message(),
            format!(
                "permission denied: the user did not allow writing {} ({})",
                real.display(),
                reason.describe()
            )
        );
    }
    assert_eq!(snapshot(&fx), before);
    // Asked once per write, about the real path, with the reason and both texts.
    let asked = approver.questions();
    let expected: Vec<SensitiveWrite> = writes
        .iter()
        .map(|(path, real, reason, old)| SensitiveWrite {
            path: real.clone(),
            reason: *reason,
            exists: std::fs::symlink_metadata(real).is_ok(),
            old_text: old.map(str::to_owned),
            new_text: "pwned".into(),
            executable: path.ends_with("pre-commit") || path.ends_with("run.sh"),
        })
        .collect();
    assert_eq!(asked, expected);
}

#[tokio::test]
async fn sensitive_writes_the_user_allows_are_written_keeping_the_mode() {
    let (approver, configure) = Approver::answering(true);
    let fx = Fixture::with(configure);
    sensitive_project(&fx);
    let mode = |file: &str| {
        std::fs::metadata(fx.proj(file))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    let files = [".git/hooks/pre-commit", "run.sh", ".git/config"];
    let before: Vec<u32> = files.iter().map(|f| mode(f)).collect();
    assert_eq!(before[..2], [0o755, 0o755]);
    for (path, real, _, _) in sensitive_writes(&fx) {
        let content = format!("allowed {}\n", path.display());
        fx.write(&path, &content).await.unwrap();
        assert_eq!(std::fs::read_to_string(&real).unwrap(), content);
    }
    assert_eq!(approver.questions().len(), sensitive_writes(&fx).len());
    // The approved executables stay executable (the question said so); the rest keep theirs.
    let after: Vec<u32> = files.iter().map(|f| mode(f)).collect();
    assert_eq!(after, before);
    assert!(std::fs::symlink_metadata(fx.proj("notes"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        listing(&fx.proj(".git/hooks")),
        ["pre-commit"],
        "no temporary file left"
    );
}

#[tokio::test]
async fn ordinary_writes_never_reach_the_approver() {
    let (approver, configure) = Approver::answering(false);
    let fx = Fixture::with(configure);
    sensitive_project(&fx);
    for (file, content) in [
        ("src/main.rs", "fn main() { println!(); }\n"),
        ("src/new/lib.rs", "pub fn f() {}\n"),
        ("README.md", "# hi\n"),
        (".gitignore", "target/\n"),
        (".github/workflows/ci.yml", "on: push\n"),
    ] {
        fx.write(fx.proj(file), content).await.unwrap();
        assert_eq!(std::fs::read_to_string(fx.proj(file)).unwrap(), content);
    }
    assert_eq!(approver.questions(), Vec::new());
}

#[tokio::test]
async fn a_reported_write_says_what_it_replaced_at_the_real_path() {
    let (_approver, configure) = Approver::answering(true);
    let fx = Fixture::with(configure);
    sensitive_project(&fx);
    std::os::unix::fs::symlink("src", fx.proj("code")).unwrap();
    let report = |path: PathBuf, content: &str| {
        let req = WriteTextFileRequest::new("s", path, content);
        fx.svc.write_text_file_reporting(req)
    };
    // An ordinary file, through a link: the real path and the text it replaced.
    let w = report(fx.proj("code/main.rs"), "fn main() { run() }\n")
        .await
        .unwrap();
    let real = std::fs::canonicalize(fx.proj("src/main.rs")).unwrap();
    assert_eq!(
        (
            w.path,
            w.existed,
            w.old_text.as_deref(),
            w.new_text.as_str()
        ),
        (real, true, Some("fn main() {}\n"), "fn main() { run() }\n")
    );
    // A new file.
    let w = report(fx.proj("src/new.rs"), "x\n").await.unwrap();
    assert_eq!((w.existed, w.old_text), (false, None));
    // A sensitive write the user allowed.
    let w = report(fx.proj(".git/config"), "[core]\n\tbare = true\n")
        .await
        .unwrap();
    assert_eq!(w.old_text.as_deref(), Some("[core]\n"));
    assert_eq!(
        std::fs::read_to_string(fx.proj(".git/config")).unwrap(),
        "[core]\n\tbare = true\n"
    );
}
