//! The one list of scenarios, and the type-erased forms the modes hold them in: an [`Entry`] per
//! scenario (its names, its command, how its flags are read), and a plan's body as [`AnyArgs`].
//! Both are written once here, for every [`Scenario`], so a new scenario needs only its line in
//! [`ALL`].

use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::AtomicBool;

use clap::{ArgMatches, FromArgMatches};
use serde_json::Value;

use super::{Flags, Runnable, Scenario};
use crate::cli::{ConnArgs, OutputArgs, PaceArgs};
use crate::error::Result;

/// Every scenario, in the order `--help` lists them.
pub static ALL: &[&dyn Entry] = &[
    &Of::<super::core::Pub>(PhantomData),
    &Of::<super::core::Sub>(PhantomData),
    &Of::<super::core::Pubsub>(PhantomData),
    &Of::<super::latency::Latency>(PhantomData),
    &Of::<super::request::Request>(PhantomData),
    &Of::<super::request::Reply>(PhantomData),
    &Of::<super::conns::Conns>(PhantomData),
    &Of::<super::js::JsPub>(PhantomData),
    &Of::<super::js::JsConsume>(PhantomData),
    &Of::<super::js::KvPut>(PhantomData),
    &Of::<super::js::KvGet>(PhantomData),
    &Of::<super::obj::ObjPut>(PhantomData),
    &Of::<super::obj::ObjGet>(PhantomData),
    &Of::<super::grpc::Grpc>(PhantomData),
];

/// Commands that only group scenarios (`msgbench js pub`), with their line in `--help`.
pub const GROUPS: &[(&str, &str)] = &[
    (
        "js",
        "JetStream: publish into a stream timing every acknowledgement, or consume from it \
         checking every message arrives once",
    ),
    (
        "kv",
        "Key-value buckets: put and get, timing each operation",
    ),
    (
        "obj",
        "Object store buckets: put objects in chunks and get them back, checking every digest",
    ),
];

/// The scenario a plan or result names.
pub fn named(name: &str) -> Option<&'static dyn Entry> {
    ALL.iter().copied().find(|e| e.name() == name)
}

/// The scenario a command line's words run (`["js", "pub"]`).
pub fn by_words(words: &[&str]) -> Option<&'static dyn Entry> {
    ALL.iter().copied().find(|e| e.words() == words)
}

/// How the reports show the section under `key`, whichever scenario's results hold it.
pub fn shown(key: &str) -> Option<&'static crate::result::Shown> {
    all_shown().find(|s| s.key == key)
}

/// Every section the reports show, once each, in the order the scenarios list them: the order
/// of their rows.
pub fn all_shown() -> impl Iterator<Item = &'static crate::result::Shown> {
    let every = ALL.iter().flat_map(|e| e.shown().iter());
    (every.clone().enumerate())
        .filter(move |(i, s)| !every.clone().take(*i).any(|t| t.key == s.key))
        .map(|(_, s)| s)
}

/// A scenario as the registry holds it.
pub trait Entry: Sync {
    fn name(&self) -> &'static str;
    fn words(&self) -> &'static [&'static str];
    fn about(&self) -> &'static str;
    /// Its name under `msgbench compare`, if drivers implement it.
    fn compare(&self) -> Option<&'static str>;
    /// Its name under `msgbench capacity`, if a search can probe it.
    fn capacity(&self) -> Option<&'static str>;
    /// Its line under `compare` or `capacity` (`capacity` true), where it differs from ABOUT.
    fn about_in(&self, capacity: bool) -> Option<&'static str>;
    /// How the reports show its own sections ([`Scenario::SHOWN`]).
    fn shown(&self) -> &'static [crate::result::Shown];
    /// Its command, named by its last word, with every flag and any helper subcommand.
    fn command(&self) -> clap::Command {
        self.load_command()
    }
    /// Its command with every flag but no helper subcommand: the load it runs, as `compare`
    /// and `capacity` offer it.
    fn load_command(&self) -> clap::Command;
    /// The flags of a parse of [`Entry::command`].
    ///
    /// # Errors
    /// What clap says of matches that do not fit (only a programming error can cause it).
    fn parse(&self, m: &ArgMatches) -> std::result::Result<Box<dyn AnyArgs>, clap::Error>;
    /// Runs a helper subcommand (`grpc serve`).
    ///
    /// # Errors
    /// As the helper's own.
    fn helper(&self, name: &str, m: &ArgMatches, stop: &AtomicBool) -> Result<u8>;
}

/// A plan's body, whatever its scenario: the flags as typed, behind what every mode needs.
pub trait AnyArgs: fmt::Debug + Send + Sync {
    fn entry(&self) -> &'static dyn Entry;
    /// The flags as a plan writes them.
    fn to_value(&self) -> Value;
    fn conn(&self) -> Option<&ConnArgs>;
    fn conn_mut(&mut self) -> Option<&mut ConnArgs>;
    /// Files the run writes besides the result, with their flags.
    fn files(&self) -> Vec<(&'static str, std::path::PathBuf)>;
    /// The pace flags, where the scenario has them ([`Flags::pace_mut`]).
    fn pace_mut(&mut self) -> Option<&mut PaceArgs>;
    /// The scenario's own warm-up ([`Flags::warmup_mut`]).
    fn warmup_mut(&mut self) -> Option<&mut std::time::Duration>;
    /// Checks the flags and builds the run.
    ///
    /// # Errors
    /// As [`Scenario::validate`].
    fn validate(&self) -> Result<Box<dyn Runnable>>;
    fn clone_box(&self) -> Box<dyn AnyArgs>;
}

/// The entry of scenario `S`.
struct Of<S>(PhantomData<fn() -> S>);

impl<S: Scenario> Entry for Of<S> {
    fn name(&self) -> &'static str {
        S::NAME
    }

    fn words(&self) -> &'static [&'static str] {
        S::WORDS
    }

    fn about(&self) -> &'static str {
        S::ABOUT
    }

    fn compare(&self) -> Option<&'static str> {
        S::COMPARE
    }

    fn capacity(&self) -> Option<&'static str> {
        S::CAPACITY
    }

    fn about_in(&self, capacity: bool) -> Option<&'static str> {
        if capacity {
            S::CAPACITY_ABOUT
        } else {
            S::COMPARE_ABOUT
        }
    }

    fn shown(&self) -> &'static [crate::result::Shown] {
        S::SHOWN
    }

    fn command(&self) -> clap::Command {
        S::helpers(self.load_command())
    }

    fn load_command(&self) -> clap::Command {
        let word = S::WORDS.last().copied().unwrap_or(S::NAME);
        // The output flags come after the scenario's own, on every scenario's command, and are
        // read apart from them: where results go is never part of a scenario's flags.
        let cmd = <S::Args as clap::Args>::augment_args(clap::Command::new(word));
        let cmd = <OutputArgs as clap::Args>::augment_args(cmd);
        // After the flags: a flattened group's doc comment would otherwise become the about.
        S::command(
            cmd.about(S::ABOUT.trim_end_matches('.'))
                .long_about(None::<&str>),
        )
    }

    fn parse(&self, m: &ArgMatches) -> std::result::Result<Box<dyn AnyArgs>, clap::Error> {
        Ok(Box::new(Typed::<S>(S::Args::from_arg_matches(m)?)))
    }

    fn helper(&self, name: &str, m: &ArgMatches, stop: &AtomicBool) -> Result<u8> {
        S::helper(name, m, stop)
    }
}

/// The flags of scenario `S`.
struct Typed<S: Scenario>(S::Args);

impl<S: Scenario> fmt::Debug for Typed<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple(S::NAME).field(&self.0).finish()
    }
}

impl<S: Scenario> AnyArgs for Typed<S> {
    fn entry(&self) -> &'static dyn Entry {
        &Of::<S>(PhantomData)
    }

    fn to_value(&self) -> Value {
        serde_json::to_value(&self.0).expect("a scenario's flags serialise")
    }

    fn conn(&self) -> Option<&ConnArgs> {
        self.0.conn()
    }

    fn conn_mut(&mut self) -> Option<&mut ConnArgs> {
        self.0.conn_mut()
    }

    fn files(&self) -> Vec<(&'static str, std::path::PathBuf)> {
        self.0.files()
    }

    fn pace_mut(&mut self) -> Option<&mut PaceArgs> {
        self.0.pace_mut()
    }

    fn warmup_mut(&mut self) -> Option<&mut std::time::Duration> {
        self.0.warmup_mut()
    }

    fn validate(&self) -> Result<Box<dyn Runnable>> {
        S::validate(&self.0)
    }

    fn clone_box(&self) -> Box<dyn AnyArgs> {
        Box::new(Typed::<S>(self.0.clone()))
    }
}

/// Implements [`Flags`] for a scenario's flags struct: where named, its `conn` field and the
/// field path of its pace flags (`pace = load.pace`).
macro_rules! flags {
    ($args:ty, conn) => {
        $crate::scenario::registry::flags!(@impl $args, {}, {});
    };
    ($args:ty, pace = $($pace:ident).+) => {
        impl $crate::scenario::Flags for $args {
            fn pace_mut(&mut self) -> Option<&mut $crate::cli::PaceArgs> {
                Some(&mut self.$($pace).+)
            }
        }
    };
    ($args:ty, conn, pace = $($pace:ident).+) => {
        $crate::scenario::registry::flags!(@impl $args, {}, {
            fn pace_mut(&mut self) -> Option<&mut $crate::cli::PaceArgs> {
                Some(&mut self.$($pace).+)
            }
        });
    };
    (@impl $args:ty, {}, {$($pace:tt)*}) => {
        impl $crate::scenario::Flags for $args {
            fn conn(&self) -> Option<&$crate::cli::ConnArgs> {
                Some(&self.conn)
            }
            fn conn_mut(&mut self) -> Option<&mut $crate::cli::ConnArgs> {
                Some(&mut self.conn)
            }
            $($pace)*
        }
    };
}
pub(crate) use flags;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every scenario that flattens the pace flags says what `--rate` paces there: its help
    /// is never the group's placeholder.
    #[test]
    fn every_paced_scenario_says_what_its_rate_means() {
        use clap::Args as _;
        let help = |cmd: &clap::Command| {
            cmd.get_arguments()
                .find(|a| a.get_id() == "rate")
                .and_then(|a| a.get_help())
                .map(ToString::to_string)
        };
        let placeholder = help(&PaceArgs::augment_args(clap::Command::new("x"))).unwrap();
        let mut paced = 0;
        for e in ALL {
            let cmd = e.command();
            if !cmd.get_arguments().any(|a| a.get_id() == "rate_schedule") {
                continue;
            }
            paced += 1;
            let rate = help(&cmd).unwrap_or_default();
            assert!(
                !rate.is_empty() && rate != placeholder,
                "{}: {rate}",
                e.name()
            );
        }
        assert_eq!(paced, 10);
    }

    #[test]
    fn names_and_words_are_unique_and_commands_build() {
        let mut names: Vec<&str> = ALL.iter().map(|e| e.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        let mut words: Vec<&[&str]> = ALL.iter().map(|e| e.words()).collect();
        words.sort_unstable();
        words.dedup();
        assert_eq!(words.len(), ALL.len());
        for e in ALL {
            e.command().debug_assert();
            assert!(named(e.name()).is_some() && by_words(e.words()).is_some());
            // A grouped scenario's group is described.
            if e.words().len() > 1 {
                assert!(
                    GROUPS.iter().any(|(g, _)| *g == e.words()[0]),
                    "{}",
                    e.name()
                );
            }
        }
    }
}
