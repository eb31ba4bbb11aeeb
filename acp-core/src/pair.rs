//! An in-memory pair: a client connection and an agent connection wired to each other with no
//! transport, on a virtual clock. For tests and benchmarks.

use crate::acp::Role;
use crate::connection::{Config, Connection, Event, Millis};

pub struct Pair<T = ()> {
    pub client: Connection<T>,
    pub agent: Connection<T>,
    pub now: Millis,
}

impl<T> Pair<T> {
    pub fn new() -> Self {
        Pair::with_configs(Config::new(Role::Client), Config::new(Role::Agent))
    }

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

    pub fn client_events(&mut self) -> Vec<Event<T>> {
        std::iter::from_fn(|| self.client.poll_event()).collect()
    }

    pub fn agent_events(&mut self) -> Vec<Event<T>> {
        std::iter::from_fn(|| self.agent.poll_event()).collect()
    }
}

impl<T> Default for Pair<T> {
    fn default() -> Self {
        Pair::new()
    }
}
