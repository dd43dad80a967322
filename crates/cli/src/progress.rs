//! Progress lines on stderr for long operations (spec §9.6): batched
//! `message send` (messages and bytes sent, rate), `message consume`
//! (messages read, rate, lag left once known) and `snapshot` (waiting for the
//! server, then bytes written). A line is shown when stderr is a terminal and
//! `-q` is not set; `--progress` forces it, `--no-progress` disables it.
//! Nothing here writes to stdout, so what a script reads never changes.
//! On a terminal the line is cleared when the operation ends (or fails);
//! forced onto a pipe or file, its last state stays, ended by a newline.

use crate::args::ProgressArgs;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

/// Redraws per second: enough to look live, cheap on a slow terminal.
const REFRESH_HZ: u8 = 10;
/// How often the spinner and the elapsed time of a waiting line move.
const TICK_INTERVAL: Duration = Duration::from_millis(100);

/// `message send --batch-size`: messages of the total, bytes in `{msg}`.
/// The templates stay well under 80 columns so the line never wraps.
pub const SEND_TEMPLATE: &str = "{bar:20} {pos}/{len} messages, {msg} sent, {rate}, {elapsed}";
/// `message consume`: messages read; `{msg}` adds the lag once known.
pub const CONSUME_TEMPLATE: &str = "{spinner} {human_pos} messages read{msg}, {rate}, {elapsed}";
/// `snapshot`: what it waits for or how much of the archive is written.
pub const SNAPSHOT_TEMPLATE: &str = "{spinner} snapshot: {msg}, {elapsed}";

/// Whether the line is shown: forced, disabled, or by default on a terminal
/// without `-q`.
pub fn wanted(flags: ProgressArgs, quiet: bool, stderr_is_terminal: bool) -> bool {
    !flags.no_progress && (flags.progress || (stderr_is_terminal && !quiet))
}

/// One progress line; dropping it ends the line (cleared or left).
pub struct Progress {
    bar: ProgressBar,
    /// Leave the last state followed by a newline instead of clearing it:
    /// stderr is not a terminal, so nothing would redraw over it.
    leave: bool,
}

impl Progress {
    /// Starts a line drawn with `template` (one of the constants above)
    /// when `wanted` says so; `len` is the total for a bar, `None` for a
    /// spinner that ticks on its own.
    pub fn start(
        flags: ProgressArgs,
        quiet: bool,
        template: &'static str,
        len: Option<u64>,
    ) -> Option<Progress> {
        let terminal = std::io::stderr().is_terminal();
        if !wanted(flags, quiet, terminal) {
            return None;
        }
        // Not `ProgressDrawTarget::stderr()`: it draws nothing unless stderr
        // is a terminal, and `--progress` must draw on a pipe as well.
        let target =
            ProgressDrawTarget::term_like_with_hz(Box::new(console::Term::stderr()), REFRESH_HZ);
        let bar = ProgressBar::with_draw_target(len, target).with_style(style(template));
        if len.is_none() {
            bar.enable_steady_tick(TICK_INTERVAL);
        }
        Some(Progress {
            bar,
            leave: !terminal,
        })
    }

    pub fn inc(&self, delta: u64) {
        self.bar.inc(delta);
    }

    pub fn set_message(&self, message: String) {
        self.bar.set_message(message);
    }

    /// Runs `f` (which prints to stdout) with the line taken off the
    /// terminal, so output and line do not overwrite each other.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.bar.suspend(f)
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if self.leave {
            self.bar.finish();
            eprintln!();
        } else {
            self.bar.finish_and_clear();
        }
    }
}

/// `f` with the line (if any) suspended.
pub fn suspended<R>(progress: Option<&Progress>, f: impl FnOnce() -> R) -> R {
    match progress {
        Some(p) => p.suspend(f),
        None => f(),
    }
}

fn style(template: &'static str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .expect("the templates are constants checked by a test")
        .with_key("rate", rate)
}

/// `{rate}`: messages per second, whole (indicatif's `{per_sec}` prints
/// four decimals).
fn rate(state: &ProgressState, w: &mut dyn std::fmt::Write) {
    let _ = write!(w, "{:.0}/s", state.per_sec());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_each_template_when_parsed_should_be_valid() {
        for template in [SEND_TEMPLATE, CONSUME_TEMPLATE, SNAPSHOT_TEMPLATE] {
            assert!(ProgressStyle::with_template(template).is_ok(), "{template}");
        }
    }

    #[test]
    fn given_flags_quiet_and_terminal_when_deciding_should_follow_spec() {
        let none = ProgressArgs::default();
        let forced = ProgressArgs {
            progress: true,
            no_progress: false,
        };
        let disabled = ProgressArgs {
            progress: false,
            no_progress: true,
        };
        // By default: a terminal without -q.
        assert!(wanted(none, false, true));
        assert!(!wanted(none, true, true));
        assert!(!wanted(none, false, false));
        // --progress forces it, --no-progress disables it.
        assert!(wanted(forced, true, false));
        assert!(!wanted(disabled, false, true));
    }
}
