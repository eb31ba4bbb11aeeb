//! What the server shares: the index of the file (behind a lock), the file it was read from,
//! and the caches of what pages ask (the rows a filter keeps, a search's matches, the
//! summary). [`follow`] reads the file as it grows, on a thread of its own.

use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde_json::Value;

use super::index::Index;
use super::query::{self, Bits, Filter, Item};
use super::search;

/// How often the file is looked at once everything in it was read.
const POLL: Duration = Duration::from_millis(250);
/// The most bytes read (and fed to the index, under its lock) at once.
pub const CHUNK: usize = 1 << 20;
/// Selections (the items of a filter) kept: each costs 8 bytes an item.
const SELECTIONS: usize = 2;
/// Lines of a new search read between looks at the index (and at a newer search).
const SEARCH_WINDOW: usize = 65_536;

/// The index and the file it reads.
pub struct State {
    pub index: Index,
    pub file: Arc<File>,
    /// Changes when the file was replaced or shrank and reading started again.
    pub generation: u64,
    /// Why reading started again, last time.
    pub restarted: Option<String>,
    /// The file's size when last looked at.
    pub size: u64,
    /// Why the file cannot be read now (gone, unreadable).
    pub problem: Option<String>,
    id: (u64, u64),
}

/// A search: its text, the rows found among the first `upto`.
struct Found {
    q: String,
    generation: u64,
    upto: usize,
    bits: Bits,
}

/// A filter's items, cached: its key, the index's generation and rows when computed.
type Selection = (String, u64, usize, Arc<Vec<Item>>);

/// Everything the server's handlers share.
pub struct Shared {
    pub path: PathBuf,
    pub state: RwLock<State>,
    selections: Mutex<Vec<Selection>>,
    summary: Mutex<Option<(u64, usize, Arc<Value>)>>,
    found: Mutex<Option<Found>>,
    /// The newest search asked for (its text and number): an older one still running stops.
    newest: Mutex<(String, u64)>,
    searches: AtomicU64,
    pub stop: AtomicBool,
}

/// A search given up for a newer one.
#[derive(Debug)]
pub struct Superseded;

impl Shared {
    /// Opens `path` (an error names it) with an empty index.
    pub fn open(path: PathBuf, index: Index) -> io::Result<Arc<Shared>> {
        // Windows refuses to open a directory as a file ("access denied"): look first.
        if std::fs::metadata(&path).is_ok_and(|m| m.is_dir()) {
            return Err(io::Error::other("it is a directory"));
        }
        let file = File::open(&path)?;
        let meta = file.metadata()?;
        if meta.is_dir() {
            return Err(io::Error::other("it is a directory"));
        }
        Ok(Arc::new(Shared {
            path,
            state: RwLock::new(State {
                index,
                file: Arc::new(file),
                generation: 0,
                restarted: None,
                size: meta.len(),
                problem: None,
                id: crate::os_compat::file_id(&meta),
            }),
            selections: Mutex::new(Vec::new()),
            summary: Mutex::new(None),
            found: Mutex::new(None),
            newest: Mutex::new((String::new(), 0)),
            searches: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        }))
    }

    pub fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads what the file holds beyond what was indexed (at most [`CHUNK`] bytes);
    /// `Ok(true)` if there was something. A file replaced (another inode) or shorter than what
    /// was read is read again from its start.
    pub fn step(&self) -> io::Result<bool> {
        self.step_at_most(CHUNK)
    }

    /// [`Shared::step`], reading at most `max` bytes.
    pub fn step_at_most(&self, max: usize) -> io::Result<bool> {
        let meta = std::fs::metadata(&self.path)?;
        let (file, from, generation) = {
            let mut s = self.write();
            s.size = meta.len();
            s.problem = None;
            let replaced = crate::os_compat::file_id(&meta) != s.id;
            if replaced || meta.len() < s.index.fed() {
                let file = File::open(&self.path)?;
                let fresh = Index::new(s.index.max_line(), s.index.max_rows());
                s.index = fresh;
                s.file = Arc::new(file);
                s.id = crate::os_compat::file_id(&meta);
                s.generation += 1;
                s.restarted = Some(if replaced {
                    "the file was replaced: read again from its start".to_string()
                } else {
                    "the file got shorter: read again from its start".to_string()
                });
            }
            if s.index.capped.is_some() || meta.len() <= s.index.fed() {
                return Ok(false);
            }
            (s.file.clone(), s.index.fed(), s.generation)
        };
        let want = ((meta.len() - from) as usize).min(max);
        let mut buf = vec![0; want];
        let n = crate::os_compat::read_at(&file, &mut buf, from)?;
        buf.truncate(n);
        let mut s = self.write();
        if s.generation != generation || s.index.fed() != from {
            return Ok(true);
        }
        s.index.feed(&buf);
        Ok(n > 0)
    }

    /// Follows the file until [`Shared::stop`]: reads what it holds, then looks again every
    /// [`POLL`].
    pub fn follow(self: Arc<Self>) {
        while !self.stop.load(Ordering::Relaxed) {
            match self.step() {
                Ok(true) => continue,
                Ok(false) => {}
                Err(e) => self.write().problem = Some(e.to_string()),
            }
            std::thread::sleep(POLL);
        }
    }

    /// The items `filter` keeps (cached for the index as it is now).
    pub fn select(&self, filter: &Filter) -> Result<Arc<Vec<Item>>, Superseded> {
        let found = match &filter.q {
            Some(q) => Some(self.search(q)?),
            None => None,
        };
        let key = filter.key();
        let s = self.read();
        let (generation, rows) = (s.generation, s.index.rows.len());
        let mut cache = self.selections.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(pos) = cache
            .iter()
            .position(|(k, g, r, _)| *k == key && *g == generation && *r == rows)
        {
            let hit = cache.remove(pos);
            let items = hit.3.clone();
            cache.push(hit);
            return Ok(items);
        }
        drop(cache);
        let items = Arc::new(query::select(&s.index, filter, found.as_ref()));
        drop(s);
        let mut cache = self.selections.lock().unwrap_or_else(|e| e.into_inner());
        cache.retain(|(k, ..)| *k != key);
        cache.push((key, generation, rows, items.clone()));
        while cache.len() > SELECTIONS {
            cache.remove(0);
        }
        Ok(items)
    }

    /// The summary (cached for the index as it is now).
    pub fn summary(&self) -> Arc<Value> {
        let s = self.read();
        let (generation, rows) = (s.generation, s.index.rows.len());
        let mut cache = self.summary.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((g, r, v)) = &*cache {
            if *g == generation && *r == rows {
                return v.clone();
            }
        }
        let v = Arc::new(query::summary(&s.index));
        *cache = Some((generation, rows, v.clone()));
        v
    }

    /// The rows whose line contains `q` (ASCII case ignored), searched in the file; a search
    /// asked for meanwhile with another text makes this one give up.
    pub fn search(&self, q: &str) -> Result<Bits, Superseded> {
        let me = {
            let mut newest = self.newest.lock().unwrap_or_else(|e| e.into_inner());
            if newest.0 != q {
                newest.0 = q.to_string();
                newest.1 = self.searches.fetch_add(1, Ordering::SeqCst) + 1;
            }
            newest.1
        };
        let stop =
            || self.searches.load(Ordering::SeqCst) != me || self.stop.load(Ordering::Relaxed);
        let needle = q.to_ascii_lowercase();
        let mut found = self.found.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if stop() {
                return Err(Superseded);
            }
            // The next window of lines not searched yet, taken under the lock.
            let (file, lines, first) = {
                let s = self.read();
                let fresh = match &*found {
                    Some(f) => f.q != q || f.generation != s.generation,
                    None => true,
                };
                if fresh {
                    *found = Some(Found {
                        q: q.to_string(),
                        generation: s.generation,
                        upto: 0,
                        bits: Bits::default(),
                    });
                }
                let f = found.as_ref().expect("just set");
                let rows = &s.index.rows;
                if f.upto >= rows.len() {
                    return Ok(f.bits.clone());
                }
                let end = (f.upto + SEARCH_WINDOW).min(rows.len());
                let lines: Vec<(u64, u64)> = rows
                    .iter_from(f.upto)
                    .take(end - f.upto)
                    .map(|r| (r.offset, r.len as u64))
                    .collect();
                (s.file.clone(), lines, f.upto)
            };
            let f = found.as_mut().expect("set above");
            let mut hits = Vec::new();
            // Rows of one line (a batch) follow each other: each is searched (the same line).
            let complete = search::scan(&file, &lines, needle.as_bytes(), &stop, &mut |i| {
                hits.push(first + i)
            })
            .unwrap_or(false);
            if !complete {
                return Err(Superseded);
            }
            for h in hits {
                f.bits.set(h);
            }
            f.upto = first + lines.len();
        }
    }
}
