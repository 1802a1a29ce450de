// SPDX-License-Identifier: GPL-2.0-only
//! Flags of other scx schedulers that scx_pandemonium refuses by name.
//!
//! `SCX_FLAGS` in /etc/default/scx and scx_loader's per-mode flags are often carried over from
//! scx_bpfland, scx_lavd or scx_cosmos when switching to scx_pandemonium, or from the published
//! scx_pandemonium, which has the same binary name. Clap alone would answer
//! such a flag with "unexpected argument", which says nothing about what to do; each flag listed
//! here is parsed (hidden from `--help`) only so the refusal can say what to use instead. A flag
//! is either supported for real or listed here: none is accepted and ignored.

use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Command};

/// One refused flag and the advice that replaces it. Its long name is its clap id.
#[derive(Debug, PartialEq, Eq)]
pub struct Foreign {
    short: Option<char>,
    long: &'static str,
    takes_value: bool,
    of: &'static str,
    instead: &'static str,
}

const OTHERS: &str = "other scx schedulers";
/// Its hidden test-harness flags; the rest of its command line (-v, --version, --no-adaptive)
/// means the same here.
const UPSTREAM: &str = "the published scx_pandemonium (5.x, a different scheduler)";

const SLICES: &str = "time slices are sized per task class by the scheduler and retuned every \
                      second by its adaptive loop; -m lowlatency halves them, -m server doubles \
                      the batch slice, and --no-adaptive keeps the mode's fixed slices";
const NO_DOMAINS: &str = "there is no primary CPU domain: tasks are placed along the CPU cache \
                          topology on every CPU; remove the flag, or pick a mode with \
                          -m/--mode (auto, gaming, lowlatency, powersave, server)";
const PLACEMENT: &str = "placement follows the task's class and the CPU cache topology, with no \
                         switch for this; remove the flag";
const POWER: &str = "CPU frequency and idle states are left to the kernel's cpufreq and cpuidle \
                     governors; remove the flag (-m powersave wakes fewer idle CPUs)";
const PERFORMANCE: &str = "use -m gaming or -m lowlatency, the modes scx_loader passes it for";
const AUTOPILOT: &str = "the adaptive loop (on by default) is what adjusts the scheduler to the \
                         load; remove the flag";
const KTHREADS: &str = "kernel threads follow a fixed policy here (workqueue workers are never \
                        BATCH); remove the flag (--compositor NAME makes a program LAT_CRITICAL)";
const PCPU: &str = "per-CPU tasks are classified by their behaviour like every other task; \
                    remove the flag (--compositor NAME makes a program LAT_CRITICAL)";
const DUMP_LOG: &str = "there is no in-memory log to dump: every message goes to stderr (the \
                        journal under systemd) as it happens; -v adds a telemetry line per \
                        second, --stats SECS every counter, -d the kernel's trace pipe; remove \
                        the flag";
const NR_CPUS: &str = "the CPUs and their topology are read from sysfs, and a CPU going offline \
                       or online reloads the scheduler; to run on fewer CPUs, take the others \
                       offline (/sys/devices/system/cpu/cpuN/online); remove the flag";

/// Takes a value (`-s 20000`), or is a switch.
const VALUE: bool = true;
const SWITCH: bool = false;

const fn flag(
    short: Option<char>,
    long: &'static str,
    takes_value: bool,
    of: &'static str,
    instead: &'static str,
) -> Foreign {
    Foreign {
        short,
        long,
        takes_value,
        of,
        instead,
    }
}

/// Every flag scx_loader's built-in modes pass to scx_bpfland, scx_lavd and scx_cosmos (current
/// and older releases), the flags users copy from there into SCX_FLAGS. A command line with one
/// of these plus a flag missing here still ends in clap's plain "unexpected argument".
#[rustfmt::skip]
pub const FOREIGN: &[Foreign] = &[
    flag(Some('s'), "slice-us", VALUE, OTHERS, SLICES),
    flag(Some('l'), "slice-us-lag", VALUE, OTHERS, SLICES),
    flag(None, "slice-min-us", VALUE, OTHERS, SLICES),
    flag(None, "slice-max-us", VALUE, OTHERS, SLICES),
    flag(None, "pinned-slice-us", VALUE, OTHERS, SLICES),
    // Its short form, -m, is --mode here; a CPU-domain value there gets its own advice.
    flag(None, "primary-domain", VALUE, OTHERS, NO_DOMAINS),
    flag(None, "performance", SWITCH, OTHERS, PERFORMANCE),
    flag(None, "powersave", SWITCH, OTHERS, "use -m powersave"),
    flag(None, "autopilot", SWITCH, OTHERS, AUTOPILOT),
    flag(Some('k'), "local-kthreads", SWITCH, OTHERS, KTHREADS),
    flag(Some('p'), "local-pcpu", SWITCH, OTHERS, PCPU),
    flag(Some('w'), "no-wake-sync", SWITCH, OTHERS, PLACEMENT),
    // A switch in scx_bpfland today; older releases took a slice length here ("-S 500").
    flag(Some('S'), "sticky-tasks", VALUE, OTHERS, PLACEMENT),
    flag(Some('I'), "idle-resume-us", VALUE, OTHERS, POWER),
    flag(Some('t'), "throttle-us", VALUE, OTHERS, POWER),
    flag(None, "dump-log", SWITCH, UPSTREAM, DUMP_LOG),
    flag(None, "nr-cpus", VALUE, UPSTREAM, NR_CPUS),
];

impl Foreign {
    fn arg(&self) -> Arg {
        let arg = Arg::new(self.long).long(self.long).hide(true);
        let arg = match self.short {
            Some(c) => arg.short(c),
            None => arg,
        };
        if self.takes_value {
            // The value is swallowed with the flag, so `-s 20000` is refused as one thing rather
            // than leaving "20000" behind as a stray argument.
            arg.num_args(0..=1)
                .action(ArgAction::Append)
                .allow_negative_numbers(true)
        } else {
            arg.action(ArgAction::Count)
        }
    }

    /// The flag as its scheduler documents it: `-s/--slice-us`.
    pub fn spelling(&self) -> String {
        match self.short {
            Some(c) => format!("-{c}/--{}", self.long),
            None => format!("--{}", self.long),
        }
    }

    pub fn message(&self) -> String {
        format!(
            "{} is a flag of {} that this scx_pandemonium does not take: {}",
            self.spelling(),
            self.of,
            self.instead
        )
    }
}

/// The refused flags found on a command line, in [`FOREIGN`]'s order.
#[derive(Debug, Default)]
pub struct Refused {
    pub found: Vec<&'static Foreign>,
}

impl Refused {
    /// The complete error for the user, or `None` when the command line has none of the flags.
    pub fn message(&self) -> Option<String> {
        if self.found.is_empty() {
            return None;
        }
        let mut text: Vec<String> = self.found.iter().map(|f| f.message()).collect();
        text.push(
            "(Look for it in SCX_FLAGS in /etc/default/scx, in PANDEMONIUM_ARGS in \
             /etc/default/pandemonium, or in the [scheds.scx_pandemonium] modes of \
             scx_loader's configuration; scx_pandemonium --help lists the options.)"
                .into(),
        );
        Some(text.join("\n"))
    }
}

impl clap::FromArgMatches for Refused {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(Refused {
            found: FOREIGN
                .iter()
                // Count flags have a default of 0, so presence alone says nothing.
                .filter(|f| m.value_source(f.long) == Some(ValueSource::CommandLine))
                .collect(),
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl clap::Args for Refused {
    fn augment_args(cmd: Command) -> Command {
        FOREIGN.iter().fold(cmd, |cmd, f| cmd.arg(f.arg()))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Args, FromArgMatches};

    fn parse(args: &[&str]) -> Result<Refused, clap::Error> {
        let cmd = Refused::augment_args(
            Command::new("t").arg(Arg::new("verbose").short('v').action(ArgAction::SetTrue)),
        );
        let m = cmd.try_get_matches_from(std::iter::once("t").chain(args.iter().copied()))?;
        Refused::from_arg_matches(&m)
    }

    fn longs(r: &Refused) -> Vec<&'static str> {
        r.found.iter().map(|f| f.long).collect()
    }

    #[test]
    fn a_clean_command_line_has_nothing_to_refuse() {
        let r = parse(&["-v"]).unwrap();
        assert!(r.found.is_empty());
        assert_eq!(r.message(), None);
    }

    #[test]
    fn scx_loader_bpfland_modes_are_refused_with_their_values() {
        // scx_loader's built-in PowerSave, Server and LowLatency flags for scx_flash and
        // scx_bpfland, their -m left out: it is --mode here.
        let r = parse(&["-s", "20000", "-I", "100", "-t", "100", "-v"]);
        assert_eq!(
            longs(&r.unwrap()),
            ["slice-us", "idle-resume-us", "throttle-us"]
        );
        let r = parse(&["--primary-domain", "performance"]).unwrap();
        assert_eq!(longs(&r), ["primary-domain"]);
        assert!(r.message().unwrap().contains("-m/--mode"));
        let r = parse(&["-s", "20000", "-S"]).unwrap();
        assert_eq!(longs(&r), ["slice-us", "sticky-tasks"]);
        let r = parse(&["-k", "-s", "5000", "-S", "500", "-l", "5000", "-w"]).unwrap();
        assert_eq!(
            longs(&r),
            [
                "slice-us",
                "slice-us-lag",
                "local-kthreads",
                "no-wake-sync",
                "sticky-tasks"
            ]
        );
    }

    #[test]
    fn lavd_modes_are_refused() {
        let r = parse(&[
            "--performance",
            "--slice-min-us",
            "3000",
            "--slice-max-us=10000",
            "--pinned-slice-us",
            "3000",
        ]);
        assert_eq!(
            longs(&r.unwrap()),
            [
                "slice-min-us",
                "slice-max-us",
                "pinned-slice-us",
                "performance"
            ]
        );
        let r = parse(&["--autopilot", "--pinned-slice-us", "500"]).unwrap();
        assert_eq!(longs(&r), ["pinned-slice-us", "autopilot"]);
        let r = parse(&["--powersave"]).unwrap();
        assert_eq!(longs(&r), ["powersave"]);
    }

    #[test]
    fn a_refused_flag_without_its_value_is_still_refused_by_name() {
        assert_eq!(longs(&parse(&["--slice-us"]).unwrap()), ["slice-us"]);
        assert_eq!(longs(&parse(&["-I", "-1"]).unwrap()), ["idle-resume-us"]);
    }

    #[test]
    fn the_message_names_each_flag_and_what_to_do() {
        let msg = parse(&["-s", "5000", "-p"]).unwrap().message().unwrap();
        assert!(
            msg.contains("-s/--slice-us is a flag of other scx schedulers"),
            "{msg}"
        );
        assert!(msg.contains("--no-adaptive"), "{msg}");
        assert!(msg.contains("-p/--local-pcpu"), "{msg}");
        assert!(msg.contains("--compositor NAME"), "{msg}");
        assert!(msg.contains("SCX_FLAGS"), "{msg}");
    }

    #[test]
    fn the_published_scx_pandemoniums_hidden_flags_are_refused_as_its_own() {
        let r = parse(&["--dump-log", "--nr-cpus", "4", "-v"]).unwrap();
        assert_eq!(longs(&r), ["dump-log", "nr-cpus"]);
        let msg = r.message().unwrap();
        assert!(
            msg.contains("--dump-log is a flag of the published scx_pandemonium"),
            "{msg}"
        );
        assert!(
            msg.contains("--nr-cpus is a flag of the published"),
            "{msg}"
        );
        assert!(msg.contains("offline"), "{msg}");
        assert!(!msg.contains("other scx schedulers"), "{msg}");
    }

    #[test]
    fn dash_m_is_not_refused() {
        let cmd = Refused::augment_args(Command::new("t").arg(Arg::new("mode").short('m')));
        let m = cmd.try_get_matches_from(["t", "-m", "gaming"]).unwrap();
        assert!(Refused::from_arg_matches(&m).unwrap().found.is_empty());
        assert!(FOREIGN.iter().all(|f| f.short != Some('m')));
    }

    #[test]
    fn lavd_power_flags_point_at_the_modes() {
        let msg = parse(&["--performance", "--powersave"])
            .unwrap()
            .message()
            .unwrap();
        assert!(msg.contains("-m gaming or -m lowlatency"), "{msg}");
        assert!(msg.contains("use -m powersave"), "{msg}");
    }

    #[test]
    fn every_entry_has_a_unique_spelling() {
        let mut spellings: Vec<_> = FOREIGN.iter().map(|f| f.spelling()).collect();
        spellings.sort();
        spellings.dedup();
        assert_eq!(spellings.len(), FOREIGN.len());
    }
}
