//! The named choices flags offer (`--mode async`, `--storage file`, …) as types: clap lists and
//! checks their values, plans carry them by the same names, and code matches on variants
//! rather than comparing strings.

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

/// Names a choice the way its flag spells it.
macro_rules! choice {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vdoc])* #[value(name = $text)] #[serde(rename = $text)] $variant),+
        }

        impl $name {
            /// The flag's spelling, which is also what results record.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }
    };
}

choice!(
    /// When a paced sender's messages are due.
    Arrivals {
        /// Evenly spaced on the schedule.
        Fixed = "fixed",
        /// A Poisson process at the schedule's rate: exponential gaps, seeded.
        Poisson = "poisson",
    }
);

impl Arrivals {
    /// For serde's `skip_serializing_if`: a plan leaves out the default.
    pub fn is_fixed(&self) -> bool {
        *self == Arrivals::Fixed
    }
}

choice!(
    /// How `js pub` publishes.
    JsPubMode {
        /// One publish at a time, each waiting for its acknowledgement.
        Sync = "sync",
        /// A window of publishes in flight.
        Async = "async",
        /// Atomic batches.
        Batch = "batch",
        /// Fast batch publishing: one flow-controlled batch per publisher, acknowledged every
        /// few messages (JetStream API level 4).
        Fast = "fast",
    }
);

choice!(
    /// When a stream's writes reach its file: with each write (the server's default), or
    /// later, in the background (`persist_mode: async`, file storage, one replica).
    Persist {
        Default = "default",
        Async = "async",
    }
);

choice!(
    /// Where a JetStream stream or bucket keeps its messages.
    Storage {
        Memory = "memory",
        File = "file",
    }
);

choice!(
    /// Which messages give way at a stream's limit.
    Discard {
        /// The stream's oldest.
        Old = "old",
        /// The publish.
        New = "new",
    }
);

choice!(
    /// Where `js consume`'s messages come from.
    Publish {
        /// msgbench publishes --msgs first, then consumes them.
        Before = "before",
        /// msgbench publishes while consuming.
        Live = "live",
        /// The stream already holds them.
        None = "none",
    }
);

choice!(
    /// The order a KV run visits its keys in.
    KeyOrder {
        Sequential = "sequential",
        /// A fixed shuffle, so runs compare.
        Random = "random",
    }
);

choice!(
    /// Whether the latency subscriber polls its socket.
    BusyPoll {
        Auto = "auto",
        On = "on",
        Off = "off",
    }
);

choice!(
    /// A setting that is on or off.
    Switch {
        On = "on",
        Off = "off",
    }
);

choice!(
    /// What each connection of a `conns` run subscribes to.
    Subscribe {
        None = "none",
        /// `<prefix>.<id>`: one subject per connection.
        Own = "own",
        /// One subject for all.
        Shared = "shared",
    }
);

choice!(
    /// `--record`: whether a run that could not be recorded still succeeds.
    Record {
        /// Record; a store that cannot be used is one line, and the exit status is the run's.
        On = "on",
        /// Record, and fail (status 1) when the run could not be recorded.
        Required = "required",
    }
);
