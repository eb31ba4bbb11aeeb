//! Who may hold a socket: the rule of [`super::server::RemoteServer`] in both its modes (`acp
//! serve --http` and `--ws`).
//!
//! A server's slots (sockets, or connections for a WebSocket-only server) are for clients
//! that presented the token. A socket that has not done so yet (its TLS handshake, its first
//! request head or its WebSocket handshake still to come) is *unauthenticated*: it holds no
//! slot, only a place in a small budget of its own, per peer address and overall. When a new
//! socket would go over either, the oldest unauthenticated socket (the peer's own, else the
//! oldest of all) is closed to make room for it. So sockets that never authenticate, however
//! many and however often reopened, cost a bounded amount and cannot keep a token holder out:
//! its socket is the newest, and it is admitted as soon as its first request shows the token.
//!
//! Peers are told apart by address: an IPv4 address, or an IPv6 /64 (what one host usually
//! has to choose from). Behind a proxy every client has the proxy's address.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

/// Unauthenticated sockets at once, from all peers (default).
pub const MAX_UNAUTHENTICATED: usize = 128;
/// Unauthenticated sockets at once from one peer address (default).
pub const MAX_UNAUTHENTICATED_PER_PEER: usize = 32;

/// The slots of authenticated sockets and the budget of unauthenticated ones. Cheap to clone.
#[derive(Clone)]
pub struct Admission {
    inner: Arc<Inner>,
}

struct Inner {
    slots: Arc<Semaphore>,
    max_slots: usize,
    total: usize,
    per_peer: usize,
    waiting: Mutex<Waiting>,
}

/// The unauthenticated sockets, oldest first.
#[derive(Default)]
struct Waiting {
    next: u64,
    by_age: BTreeMap<u64, (Peer, CancellationToken)>,
    by_peer: HashMap<Peer, VecDeque<u64>>,
}

impl Waiting {
    fn remove(&mut self, id: u64) -> Option<(Peer, CancellationToken)> {
        let (peer, token) = self.by_age.remove(&id)?;
        if let Some(ids) = self.by_peer.get_mut(&peer) {
            ids.retain(|i| *i != id);
            if ids.is_empty() {
                self.by_peer.remove(&peer);
            }
        }
        Some((peer, token))
    }
}

/// A peer for the per-peer budget: an IPv4 address or an IPv6 /64.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Peer(IpAddr);

impl Peer {
    fn of(ip: IpAddr) -> Peer {
        match ip.to_canonical() {
            IpAddr::V6(v6) => {
                let s = v6.segments();
                Peer(IpAddr::V6(Ipv6Addr::new(
                    s[0], s[1], s[2], s[3], 0, 0, 0, 0,
                )))
            }
            v4 => Peer(v4),
        }
    }
}

/// No slot is free: every one is held by an authenticated socket (answer 503).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full;

/// Why [`Ticket::admit`] did not admit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotAdmitted {
    /// No slot is free (answer 503); the socket stays unauthenticated.
    Full,
    /// The socket was closed to make room for a newer one.
    Evicted,
}

/// An unauthenticated socket closed to make room for a newer one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Eviction {
    /// The address of the socket closed.
    pub peer: IpAddr,
    /// Whether it was its peer's budget (else the overall one) that was full.
    pub peer_budget: bool,
}

impl Admission {
    /// `slots` authenticated sockets at once; at most `total` unauthenticated ones, `per_peer`
    /// from one address (each at least 1).
    pub fn new(slots: usize, total: usize, per_peer: usize) -> Admission {
        let total = total.max(1);
        Admission {
            inner: Arc::new(Inner {
                slots: Arc::new(Semaphore::new(slots)),
                max_slots: slots,
                total,
                per_peer: per_peer.clamp(1, total),
                waiting: Mutex::new(Waiting::default()),
            }),
        }
    }

    /// A new socket from `peer`: its ticket, unauthenticated, and the socket closed to make
    /// room for it if there was one (its ticket's [`Ticket::evicted`] fires). [`Full`] when
    /// every slot is held by an authenticated socket.
    pub fn arrive(&self, peer: IpAddr) -> Result<(Ticket, Option<Eviction>), Full> {
        if self.inner.slots.available_permits() == 0 {
            return Err(Full);
        }
        let peer = Peer::of(peer);
        let mut w = self.inner.waiting.lock().unwrap();
        let own = w.by_peer.get(&peer).map_or(0, VecDeque::len);
        let victim = if own >= self.inner.per_peer {
            w.by_peer
                .get(&peer)
                .and_then(|ids| ids.front().copied())
                .map(|id| (id, true))
        } else if w.by_age.len() >= self.inner.total {
            w.by_age.keys().next().copied().map(|id| (id, false))
        } else {
            None
        };
        let eviction = victim.and_then(|(id, peer_budget)| {
            let (gone, token) = w.remove(id)?;
            token.cancel();
            Some(Eviction {
                peer: gone.0,
                peer_budget,
            })
        });
        let id = w.next;
        w.next += 1;
        let evicted = CancellationToken::new();
        w.by_age.insert(id, (peer, evicted.clone()));
        w.by_peer.entry(peer).or_default().push_back(id);
        drop(w);
        let ticket = Ticket {
            inner: self.inner.clone(),
            id,
            evicted,
            slot: Mutex::new(None),
        };
        Ok((ticket, eviction))
    }

    /// Slots held by authenticated sockets now.
    pub fn admitted(&self) -> usize {
        self.inner.max_slots - self.inner.slots.available_permits()
    }

    /// Unauthenticated sockets now.
    pub fn unauthenticated(&self) -> usize {
        self.inner.waiting.lock().unwrap().by_age.len()
    }
}

/// One socket's place: unauthenticated until [`admit`](Ticket::admit), then a slot, given back
/// when the ticket is dropped (the socket closed).
pub struct Ticket {
    inner: Arc<Inner>,
    id: u64,
    evicted: CancellationToken,
    slot: Mutex<Option<OwnedSemaphorePermit>>,
}

impl Ticket {
    /// Resolves when the socket was closed to make room for a newer one (never once admitted):
    /// its task must close it.
    pub fn evicted(&self) -> WaitForCancellationFuture<'_> {
        self.evicted.cancelled()
    }

    /// The socket showed the token: it leaves the unauthenticated budget and takes a slot
    /// (at once if it already has one).
    pub fn admit(&self) -> Result<(), NotAdmitted> {
        let mut slot = self.slot.lock().unwrap();
        if slot.is_some() {
            return Ok(());
        }
        let mut w = self.inner.waiting.lock().unwrap();
        if !w.by_age.contains_key(&self.id) {
            return Err(NotAdmitted::Evicted);
        }
        let permit = self
            .inner
            .slots
            .clone()
            .try_acquire_owned()
            .map_err(|_| NotAdmitted::Full)?;
        w.remove(self.id);
        *slot = Some(permit);
        Ok(())
    }

    /// Whether [`admit`](Ticket::admit) succeeded.
    pub fn is_admitted(&self) -> bool {
        self.slot.lock().unwrap().is_some()
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Ok(mut w) = self.inner.waiting.lock() {
            w.remove(self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_oldest_unauthenticated_socket_of_the_peer_makes_room() {
        let a = Admission::new(2, 10, 3);
        let mut held: Vec<Ticket> = (0..3)
            .map(|_| a.arrive(ip("10.0.0.1")).unwrap().0)
            .collect();
        let other = a.arrive(ip("10.0.0.2")).unwrap().0;
        assert_eq!(a.unauthenticated(), 4);
        let (newest, eviction) = a.arrive(ip("10.0.0.1")).unwrap();
        assert_eq!(
            eviction,
            Some(Eviction {
                peer: ip("10.0.0.1"),
                peer_budget: true
            })
        );
        assert!(held[0].evicted.is_cancelled());
        assert!(!held[1].evicted.is_cancelled() && !other.evicted.is_cancelled());
        assert_eq!(held[0].admit(), Err(NotAdmitted::Evicted));
        assert_eq!(a.unauthenticated(), 4);
        // Admitted: out of the budget, into a slot, never evicted.
        newest.admit().unwrap();
        assert!(newest.is_admitted());
        assert_eq!((a.unauthenticated(), a.admitted()), (3, 1));
        newest.admit().unwrap();
        assert_eq!(a.admitted(), 1);
        held.push(a.arrive(ip("10.0.0.1")).unwrap().0);
        held.push(a.arrive(ip("10.0.0.1")).unwrap().0);
        assert!(!newest.evicted.is_cancelled());
        drop(newest);
        assert_eq!(a.admitted(), 0);
    }

    #[test]
    fn the_oldest_of_all_makes_room_when_the_total_is_reached() {
        let a = Admission::new(1, 3, 3);
        let first = a.arrive(ip("10.0.0.1")).unwrap().0;
        let second = a.arrive(ip("10.0.0.2")).unwrap().0;
        let _third = a.arrive(ip("10.0.0.3")).unwrap().0;
        let (_fourth, eviction) = a.arrive(ip("10.0.0.4")).unwrap();
        assert_eq!(
            eviction,
            Some(Eviction {
                peer: ip("10.0.0.1"),
                peer_budget: false
            })
        );
        assert!(first.evicted.is_cancelled() && !second.evicted.is_cancelled());
        assert_eq!(a.unauthenticated(), 3);
        // A closed socket leaves the budget.
        drop(second);
        assert_eq!(a.unauthenticated(), 2);
        assert_eq!(a.arrive(ip("10.0.0.5")).unwrap().1, None);
    }

    #[test]
    fn with_every_slot_held_a_new_socket_is_refused_and_admission_waits() {
        let a = Admission::new(1, 8, 8);
        let (one, _) = a.arrive(ip("127.0.0.1")).unwrap();
        let (two, _) = a.arrive(ip("127.0.0.1")).unwrap();
        one.admit().unwrap();
        assert_eq!(two.admit(), Err(NotAdmitted::Full));
        assert!(a.arrive(ip("127.0.0.1")).is_err());
        drop(one);
        two.admit().unwrap();
    }

    #[test]
    fn an_ipv6_peer_is_its_64_and_a_mapped_ipv4_its_address() {
        let a = Admission::new(1, 8, 1);
        let first = a.arrive(ip("2001:db8:1:2::1")).unwrap().0;
        let (_, eviction) = a.arrive(ip("2001:db8:1:2:ffff::9")).unwrap();
        assert!(eviction.is_some() && first.evicted.is_cancelled());
        let v4 = a.arrive(ip("192.0.2.7")).unwrap().0;
        let (_, eviction) = a.arrive(ip("::ffff:192.0.2.7")).unwrap();
        assert_eq!(eviction.map(|e| e.peer), Some(ip("192.0.2.7")));
        assert!(v4.evicted.is_cancelled());
    }
}
