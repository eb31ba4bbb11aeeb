//! An in-memory pair: a client connection and an agent connection wired to each other with no
//! transport, on a virtual clock. For tests and benchmarks.

use crate::acp::Role;
use crate::connection::{Config, Connection, Event, Millis};

/// A client [`Connection`] and an agent [`Connection`] joined in memory, with a virtual
/// clock. Drive either side through its field, then [`Pair::pump`] to deliver the bytes and
/// read what each side got with [`Pair::client_events`] / [`Pair::agent_events`].
///
/// ```
/// use acp_core::pair::Pair;
/// use acp_core::{CallError, Event, RequestOptions};
///
/// let mut pair: Pair = Pair::new();
/// let id = pair
///     .client
///     .send_request("_demo/ping", None::<&()>, RequestOptions::default().timeout(100), pair.now)
///     .unwrap();
/// pair.pump();
/// let events = pair.agent_events();
/// assert!(matches!(&events[..], [Event::Request { method, .. }] if method == "_demo/ping"));
/// // The agent never answers: after 100 ms on the virtual clock the request times out.
/// pair.advance(100);
/// let events = pair.client_events();
/// assert!(matches!(
///     &events[..],
///     [Event::Response { id: done, result: Err(CallError::TimedOut { after_ms: 100 }), .. }]
///         if *done == id
/// ));
/// ```
pub struct Pair<T = ()> {
    /// The client side.
    pub client: Connection<T>,
    /// The agent side.
    pub agent: Connection<T>,
    /// The virtual clock, in milliseconds from 0; pass it as `now` to the connections'
    /// commands. [`Pair::advance`] moves it.
    pub now: Millis,
}

impl<T> Pair<T> {
    /// A pair with the default configs of both roles, at time 0.
    pub fn new() -> Self {
        Pair::with_configs(Config::new(Role::Client), Config::new(Role::Agent))
    }

    /// A pair with these configs, at time 0.
    ///
    /// # Panics
    ///
    /// If `client` is not a client's config or `agent` not an agent's.
    pub fn with_configs(client: Config, agent: Config) -> Self {
        assert_eq!(
            client.role,
            Role::Client,
            "first config must be the client's"
        );
        assert_eq!(agent.role, Role::Agent, "second config must be the agent's");
        Pair {
            client: Connection::new(client),
            agent: Connection::new(agent),
            now: 0,
        }
    }

    /// Moves bytes both ways until neither side has anything to send. Returns how many bytes
    /// moved.
    pub fn pump(&mut self) -> usize {
        let mut moved = 0;
        loop {
            let mut any = false;
            if let Some(bytes) = self.client.poll_transmit() {
                moved += bytes.len();
                self.agent.handle_bytes(&bytes, self.now);
                any = true;
            }
            if let Some(bytes) = self.agent.poll_transmit() {
                moved += bytes.len();
                self.client.handle_bytes(&bytes, self.now);
                any = true;
            }
            if !any {
                return moved;
            }
        }
    }

    /// Advances the virtual clock, fires both sides' deadlines and pumps.
    pub fn advance(&mut self, ms: Millis) {
        self.now += ms;
        self.client.handle_timeout(self.now);
        self.agent.handle_timeout(self.now);
        self.pump();
    }

    /// Drains the client's events, oldest first.
    pub fn client_events(&mut self) -> Vec<Event<T>> {
        std::iter::from_fn(|| self.client.poll_event()).collect()
    }

    /// Drains the agent's events, oldest first.
    pub fn agent_events(&mut self) -> Vec<Event<T>> {
        std::iter::from_fn(|| self.agent.poll_event()).collect()
    }
}

impl<T> Default for Pair<T> {
    fn default() -> Self {
        Pair::new()
    }
}
