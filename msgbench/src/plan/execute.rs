//! The one path a plan takes to a result: checked into a [`Validated`] run, its targets
//! resolved, then run against them. Every command that runs load comes through here (a typed
//! scenario, `run PLAN.json`, each `--runs` repetition, the default suite, a capacity probe,
//! compare's native client, an agent's share), so what one of them gets, every one of them
//! gets.

use crate::error::{Error, Result};
use crate::gate::Threshold;
use crate::metric::Metric;
use crate::result::RunResult;
use crate::scenario::{Common, Ctx, Load, Runnable, Second};
use crate::server::{self, Target};

/// A plan after every check: its scenario's options, ready to run. Built by
/// [`Plan::validate`](super::Plan::validate) alone, whether the plan came from typed flags or
/// from a file, so both are held to the same rules.
#[derive(Debug)]
pub struct Validated {
    name: &'static str,
    run: Box<dyn Runnable>,
    /// What every mode asks of the run, asked of the scenario once.
    common: Common,
}

impl Validated {
    pub(super) fn new(name: &'static str, run: Box<dyn Runnable>) -> Self {
        let common = run.common();
        Self { name, run, common }
    }

    /// The scenario's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// What every mode needs to know of the run: its servers, schedule, timeout and so on.
    pub fn common(&self) -> &Common {
        &self.common
    }

    /// Refuses a gate (`--threshold`, `--slo`: `flag`) on a figure this scenario cannot
    /// produce: resolved once, here, so such a gate never waits for a run to fail it.
    ///
    /// # Errors
    /// [`Error::Usage`] naming the flag, the figure and what the scenario can gate on.
    pub fn gates(&self, flag: &str, gates: &[Threshold]) -> Result<()> {
        let measures = &self.common.measures;
        match gates.iter().find(|t| !measures.contains(&t.metric())) {
            Some(t) => Err(Error::Usage(format!(
                "{flag} '{t}': `{}` does not produce {}; it can gate on {}",
                self.name,
                t.metric().name(),
                Metric::list(measures)
            ))),
            None => Ok(()),
        }
    }
}

impl std::ops::Deref for Validated {
    type Target = dyn Runnable;
    fn deref(&self) -> &Self::Target {
        self.run.as_ref()
    }
}

/// The servers a run uses: its clients' server (none for gRPC, which serves or names its
/// own), and a second one when the scenario has one (`latency`'s subscriber).
pub struct Targets {
    pub main: Option<Target>,
    pub second: Option<Target>,
}

impl Targets {
    /// Finds or starts the servers a validated plan names.
    ///
    /// # Errors
    /// No server binary, a server that does not start, a link that cannot be set up.
    pub fn resolve(v: &Validated) -> Result<Self> {
        let Load::Nats {
            server: choice,
            link,
            second,
        } = &v.common.load
        else {
            return Ok(Self {
                main: None,
                second: None,
            });
        };
        let main = server::resolve(choice, *link)?;
        let second = match second {
            Second::None => None,
            Second::Server(b) => Some(server::resolve(b, *link)?),
            Second::NextNode => main.node(1),
        };
        Ok(Self {
            main: Some(main),
            second,
        })
    }
}

/// Runs a validated plan once against the context's servers (`main`, and `second` when the
/// scenario has one); on an agent, only its `share`.
///
/// # Errors
/// Failures that prevent a result: refused connections, a server that went away for good.
pub fn execute(v: &Validated, ctx: &Ctx<'_>) -> Result<RunResult> {
    if ctx.share.is_some() {
        v.split()?;
    }
    // The live line and page name each side by what it counts, as the result will.
    let params = v.params();
    let words = params.describe();
    ctx.meter
        .name_series(words.role_counts("pub"), words.role_counts("sub"));
    let mut r = v.run(ctx)?;
    // A latency of no samples measured nothing: it is null, not a table of zeros that
    // `--threshold 'p99<1ms'` would pass.
    for l in [&mut r.latency, &mut r.latency_uncorrected] {
        if l.as_ref().is_some_and(|l| l.count == 0) {
            *l = None;
        }
    }
    r.name_roles();
    Ok(r)
}
