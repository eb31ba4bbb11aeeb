//! Windows (run under wine64 by scripts/test-windows.sh): the confined `fs/*` service there
//! (cap-std directory handles). Reads and writes inside a root, `..` and absolute paths out of
//! it refused, the root matched as Windows compares paths (case, `/`), the read limit and the
//! errors. Not here: symbolic links and junctions, which Wine 8 cannot create
//! (`CreateSymbolicLinkW` reports success and creates nothing; `mklink /J` fails), so their
//! refusal rests on cap-std (docs/reliability.md, "Windows"). On other systems this file is
//! empty (fs_service covers Unix).

#[cfg(windows)]
mod windows {
    use std::path::PathBuf;

    use acp_native::fs_service::{FsConfig, FsError, FsService};
    use agent_client_protocol_schema::v1::{ReadTextFileRequest, WriteTextFileRequest};

    /// A directory of its own under the temp dir, with `proj` (the root) and `outside`.
    struct Fixture {
        dir: PathBuf,
        svc: FsService,
    }

    impl Fixture {
        fn new(name: &str) -> Fixture {
            Fixture::with(name, |c| c)
        }

        fn with(name: &str, f: impl FnOnce(FsConfig) -> FsConfig) -> Fixture {
            let dir =
                std::env::temp_dir().join(format!("acp-fs-win-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(dir.join("proj")).unwrap();
            std::fs::create_dir_all(dir.join("outside")).unwrap();
            std::fs::write(dir.join("outside").join("secret.txt"), "secret").unwrap();
            let svc = FsService::new(f(FsConfig::new([dir.join("proj")])));
            Fixture { dir, svc }
        }

        fn proj(&self, rel: &str) -> PathBuf {
            self.dir.join("proj").join(rel)
        }

        async fn read(&self, path: impl Into<PathBuf>) -> Result<String, FsError> {
            self.svc
                .read_text_file(ReadTextFileRequest::new("s1", path))
                .await
                .map(|r| r.content)
        }

        async fn write(&self, path: impl Into<PathBuf>, text: &str) -> Result<(), FsError> {
            self.svc
                .write_text_file(WriteTextFileRequest::new("s1", path, text))
                .await
                .map(drop)
        }
    }

    impl Drop for Fixture {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    fn confined(f: &Fixture) -> FsService {
        FsService::new(
            FsConfig::new([f.dir.join("proj")])
                .reads(acp_native::fs_service::AccessScope::WithinRoots),
        )
    }

    fn outside(e: &FsError) -> bool {
        matches!(e, FsError::OutsideRoots { .. })
    }

    #[tokio::test]
    async fn write_then_read_inside() {
        let f = Fixture::new("rw");
        f.write(f.proj("a.txt"), "one\ntwo\n").await.unwrap();
        assert_eq!(f.read(f.proj("a.txt")).await.unwrap(), "one\ntwo\n");
        // Replaced atomically, no temporary file left.
        f.write(f.proj("a.txt"), "three\n").await.unwrap();
        assert_eq!(std::fs::read_to_string(f.proj("a.txt")).unwrap(), "three\n");
        // Missing parents are created inside.
        f.write(f.proj("d/e/b.txt"), "deep").await.unwrap();
        assert_eq!(
            std::fs::read_to_string(f.proj("d/e/b.txt")).unwrap(),
            "deep"
        );
        let names: Vec<_> = std::fs::read_dir(f.dir.join("proj"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        let mut names = names;
        names.sort();
        assert_eq!(names, ["a.txt", "d"]);
        // Lines and limit as on Unix.
        let r = f
            .svc
            .read_text_file(
                ReadTextFileRequest::new("s1", f.proj("a.txt"))
                    .line(1)
                    .limit(1),
            )
            .await
            .unwrap();
        assert_eq!(r.content, "three\n");
    }

    #[tokio::test]
    async fn root_matched_as_windows_compares() {
        let f = Fixture::new("case");
        // Upper case and `/` separators still name the root's inside.
        let upper = PathBuf::from(
            f.proj("c.txt")
                .to_string_lossy()
                .to_uppercase()
                .replace('\\', "/"),
        );
        f.write(&upper, "case").await.unwrap();
        assert_eq!(std::fs::read_to_string(f.proj("c.txt")).unwrap(), "case");
    }

    #[tokio::test]
    async fn escapes_refused() {
        let f = Fixture::new("esc");
        // `..` out of the root.
        let up = f
            .dir
            .join("proj")
            .join("..")
            .join("outside")
            .join("secret.txt");
        let e = f.write(&up, "x").await.unwrap_err();
        assert!(outside(&e), "{e:?}");
        let e = f.write(f.proj("..\\evil.txt"), "x").await.unwrap_err();
        assert!(outside(&e), "{e:?}");
        assert!(!f.dir.join("evil.txt").exists());
        // An absolute path elsewhere.
        let e = f
            .write(f.dir.join("outside").join("new.txt"), "x")
            .await
            .unwrap_err();
        assert!(outside(&e), "{e:?}");
        assert!(!f.dir.join("outside").join("new.txt").exists());
        // Confined reads too.
        let svc = confined(&f);
        let e = svc
            .read_text_file(ReadTextFileRequest::new("s1", up))
            .await
            .unwrap_err();
        assert!(outside(&e), "{e:?}");
        assert_eq!(
            std::fs::read_to_string(f.dir.join("outside").join("secret.txt")).unwrap(),
            "secret"
        );
        // `..` that stays inside is followed.
        f.write(f.proj("x\\..\\in.txt"), "in").await.unwrap();
        assert_eq!(std::fs::read_to_string(f.proj("in.txt")).unwrap(), "in");
        // Through a directory that is not there: nothing created on the way.
        let _ = f.write(f.proj("nodir\\..\\in2.txt"), "in").await;
        assert!(!f.proj("nodir").exists());
        // A relative path is refused before anything.
        let e = f.write(PathBuf::from("rel.txt"), "x").await.unwrap_err();
        assert!(matches!(e, FsError::RelativePath { .. }), "{e:?}");
    }

    #[tokio::test]
    async fn limits_and_errors() {
        let f = Fixture::with("lim", |c| c.max_read_bytes(4));
        std::fs::write(f.proj("big.txt"), "12345").unwrap();
        let e = f.read(f.proj("big.txt")).await.unwrap_err();
        assert!(
            matches!(
                e,
                FsError::TooLarge {
                    size: 5,
                    limit: 4,
                    ..
                }
            ),
            "{e:?}"
        );
        let e = f.read(f.proj("missing.txt")).await.unwrap_err();
        assert!(matches!(e, FsError::NotFound { .. }), "{e:?}");
        std::fs::write(f.proj("bin.txt"), [0xff, 0xfe]).unwrap();
        let e = f.read(f.proj("bin.txt")).await.unwrap_err();
        assert!(matches!(e, FsError::NotUtf8 { .. }), "{e:?}");
        std::fs::create_dir(f.proj("sub")).unwrap();
        let e = f.write(f.proj("sub"), "x").await.unwrap_err();
        assert!(matches!(e, FsError::IsADirectory { .. }), "{e:?}");
    }
}
